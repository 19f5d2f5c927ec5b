package handlers

import (
	"testing"

	"github.com/kopf-go/kopf/internal/sharding"
)

// The member names and the owner label are wire names: owner labels
// written by one version are read by the next, so the values are pinned.
func TestShardNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{ShardMember("replica-1"), "md48ae3b3fc3a"},
		{ShardMember("replica-2"), "m912377e82532"},
		{ShardMember("kopf-7d9f-abcde"), "m2165925eccca"},
		{ShardOwnerLabel("main"), "shard.kopf.dev/main"},
		{ShardOwnerLabel("e2e"), "shard.kopf.dev/e2e"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	// The engine names its members with the same function.
	if got, want := ShardMember("kopf@host/20261201100000/xyz"), sharding.MemberName("kopf@host/20261201100000/xyz"); got != want {
		t.Errorf("ShardMember() = %q, the engine's member name is %q", got, want)
	}
}
