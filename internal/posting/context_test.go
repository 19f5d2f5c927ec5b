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
