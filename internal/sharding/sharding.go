// Package sharding decides which member of a ring handles an object:
// rendezvous (highest random weight) hashing of the object's identity over
// the live members, so that a member joining or leaving moves only the
// objects it takes or gives, about 1/N of them.
package sharding

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
)

// Owner is the member that handles the object with the given key (its
// uid): the member with the highest score for it; "" without members.
// The order of members does not matter; ties, which need equal 64-bit
// scores, go to the smaller name, so every observer picks the same one.
func Owner(key string, members []string) string {
	var owner string
	var best uint64
	for _, m := range members {
		s := score(key, m)
		if owner == "" || s > best || s == best && m < owner {
			owner, best = m, s
		}
	}
	return owner
}

// Second is the member that would handle the object with the given key
// if its owner were gone: the owner among the other members; "" with
// fewer than two.
func Second(key string, members []string) string {
	first := Owner(key, members)
	var second string
	var best uint64
	for _, m := range members {
		if m == first {
			continue
		}
		s := score(key, m)
		if second == "" || s > best || s == best && m < second {
			second, best = m, s
		}
	}
	return second
}

// score is the weight of a member for a key: FNV-1a over both (with a
// separator, so that "ab"+"c" and "a"+"bc" differ), then a finalising mix,
// because FNV's high bits alone vary too little between similar inputs
// (member names that differ in their last character) to compare fairly.
func score(key, member string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(member))
	return mix(h.Sum64())
}

// mix is splitmix64's finaliser: every input bit affects every output bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// MemberName is the name of one incarnation of the member with the given
// identity, as it stands in owner labels and Lease names: identities
// (name@host/time/…) are not valid label values, so the name is a short
// hash of both. A member that starts without a Lease to take over is a new
// incarnation with a new name, so that it never handles an object that a
// previous incarnation owned and that the ring may be moving away from it
// right then (docs/sharding.md, "Members").
func MemberName(identity, incarnation string) string {
	sum := sha256.Sum256([]byte(identity + "\x00" + incarnation))
	return "m" + hex.EncodeToString(sum[:6])
}
