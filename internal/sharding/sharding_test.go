package sharding

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
)

// uids are object identities shaped as the API server makes them.
func uids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i*2654435761%(1<<32), i%65536, i%4096, (i*7)%4096, i*40503)
	}
	return out
}

func owners(keys, members []string) map[string]string {
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = Owner(k, members)
	}
	return out
}

func counts(owned map[string]string) map[string]int {
	out := map[string]int{}
	for _, m := range owned {
		out[m]++
	}
	return out
}

func TestOwnerWithoutMembers(t *testing.T) {
	if got := Owner("uid", nil); got != "" {
		t.Errorf("Owner() = %q, want none", got)
	}
}

// Every observer must pick the same owner, whatever order it lists the
// members in.
func TestOwnerIgnoresMemberOrder(t *testing.T) {
	members := []string{"a1b2c3", "d4e5f6", "0718293", "zz"}
	reversed := slices.Clone(members)
	slices.Reverse(reversed)
	keys := uids(500)
	if diff := cmp.Diff(owners(keys, members), owners(keys, reversed)); diff != "" {
		t.Errorf("owners differ by member order (-listed +reversed):\n%s", diff)
	}
}

// Objects spread evenly: each of 3 members gets its third within 10%.
func TestOwnersSpread(t *testing.T) {
	members := []string{"member-0", "member-1", "member-2"}
	keys := uids(3000)
	for m, n := range counts(owners(keys, members)) {
		if n < 900 || n > 1100 {
			t.Errorf("%s owns %d of 3000 objects, want 1000 ± 10%%", m, n)
		}
	}
}

// A member that joins takes about 1/4 of the objects from the other three,
// and no object moves between the three.
func TestJoinMovesOnlyWhatTheNewMemberTakes(t *testing.T) {
	keys := uids(3000)
	before := owners(keys, []string{"member-0", "member-1", "member-2"})
	after := owners(keys, []string{"member-0", "member-1", "member-2", "member-3"})
	moved := 0
	for _, k := range keys {
		if before[k] == after[k] {
			continue
		}
		moved++
		if after[k] != "member-3" {
			t.Errorf("%s moved from %s to %s, not to the new member", k, before[k], after[k])
		}
	}
	if moved < 675 || moved > 825 {
		t.Errorf("%d of 3000 objects moved, want 750 ± 10%%", moved)
	}
}

// A member that leaves gives its objects to the others, and no other
// object moves.
func TestLeaveMovesOnlyTheLeaversObjects(t *testing.T) {
	keys := uids(3000)
	before := owners(keys, []string{"member-0", "member-1", "member-2", "member-3"})
	after := owners(keys, []string{"member-0", "member-2", "member-3"})
	for _, k := range keys {
		if before[k] != after[k] && before[k] != "member-1" {
			t.Errorf("%s moved from %s to %s, though its owner stayed", k, before[k], after[k])
		}
	}
	if n := counts(after)["member-1"]; n != 0 {
		t.Errorf("the member that left still owns %d objects", n)
	}
}

// Member names are valid label values (at most 63 characters of
// [a-z0-9A-Z-_.], starting and ending alphanumeric), stable, and differ
// between identities and between incarnations of one identity.
func TestMemberName(t *testing.T) {
	names := map[string]string{}
	for _, in := range [][2]string{
		{"kopf@host-1/20261201100000/abcde", "1a2b3c4d"},
		{"kopf@host-2/20261201100000/abcde", "1a2b3c4d"},
		{"kopf@host-1/20261201100000/abcde", "5e6f7a8b"},
		{"kopf@host-1/20261201100000/abcde1a2b3c4d", ""}, // the separator matters
	} {
		name := MemberName(in[0], in[1])
		if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
			t.Errorf("%q is not a label value: %v", name, errs)
		}
		if name != MemberName(in[0], in[1]) {
			t.Errorf("the name of %q changed", in)
		}
		if prev, ok := names[name]; ok {
			t.Errorf("%q and %q share the name %q", prev, in, name)
		}
		names[name] = fmt.Sprint(in)
	}
}
