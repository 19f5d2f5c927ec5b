package posting

import (
	"context"
	"testing"
)

func TestContext(t *testing.T) {
	ctx := context.Background()
	if got := FromContext(ctx); got != nil {
		t.Errorf("FromContext() of an empty context = %p, want nil", got)
	}
	p := &Poster{}
	if got := FromContext(NewContext(ctx, p)); got != p {
		t.Errorf("FromContext() = %p, want the poster %p", got, p)
	}
}

// A nil poster (an engine set up without one) must not become a target
// whose Event would be called on a nil pointer.
func TestContextWithoutPoster(t *testing.T) {
	if got := FromContext(NewContext(context.Background(), nil)); got != nil {
		t.Errorf("FromContext() after NewContext(nil) = %v, want nil", got)
	}
}
