package memo

import (
	"slices"
	"sync"
	"testing"
)

func TestMemo(t *testing.T) {
	var m Memo
	if _, ok := m.Get("x"); ok {
		t.Fatal("a new memo has a value")
	}
	m.Set("x", 1)
	m.Update("x", func(v any, ok bool) any { return v.(int) + 1 })
	m.Update("y", func(v any, ok bool) any {
		if ok {
			t.Error("Update saw a value that is not there")
		}
		return "new"
	})
	if v, _ := m.Get("x"); v != 2 {
		t.Errorf("x = %v, want 2", v)
	}
	keys := m.Keys()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"x", "y"}) {
		t.Errorf("Keys() = %v", keys)
	}
	m.Delete("y")
	if _, ok := m.Get("y"); ok {
		t.Error("Delete left the key")
	}
}

func TestCopyIsShallow(t *testing.T) {
	shared := &[]int{1}
	var m Memo
	m.Set("shared", shared)
	m.Set("own", 1)
	c := m.Copy()
	c.Set("own", 2)
	if v, _ := m.Get("own"); v != 1 {
		t.Errorf("the copy's own key changed the original: %v", v)
	}
	v, _ := c.Get("shared")
	if v.(*[]int) != shared {
		t.Error("the copy does not share the original's values")
	}
	var nilMemo *Memo
	if c := nilMemo.Copy(); c == nil {
		t.Error("a copy of no memo must be an empty memo")
	}
}

func TestConcurrentUse(t *testing.T) {
	var m Memo
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				m.Update("n", func(v any, ok bool) any {
					if !ok {
						return 1
					}
					return v.(int) + 1
				})
			}
		}()
	}
	wg.Wait()
	if v, _ := m.Get("n"); v != 800 {
		t.Errorf("n = %v, want 800", v)
	}
}
