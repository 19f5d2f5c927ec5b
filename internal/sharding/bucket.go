package sharding

import (
	"hash/fnv"
	"strconv"
)

// Buckets is how many buckets a ring's objects fall into by their key.
// A retired member's objects are adopted bucket by bucket, so that each
// adopter's cache selects its own buckets by a label instead of listing
// all the retired member's objects and keeping its part
// (docs/sharding.md, "Adoption"). 256 buckets give each of two adopters
// about 128, and each of 100 about 2.6, while a selector that names the
// other adopters' buckets stays well inside a URL's length.
const Buckets = 256

// Bucket is the bucket of the object with the given key (ObjectKey), a
// value of the ring's bucket label: a hash of the key alone, so that it
// never changes for the object's name.
func Bucket(key string) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	return strconv.FormatUint(mix(h.Sum64())%Buckets, 10)
}

// ValidBucket reports whether the value names a bucket.
func ValidBucket(value string) bool {
	n, err := strconv.ParseUint(value, 10, 16)
	return err == nil && n < Buckets && strconv.FormatUint(n, 10) == value
}

// AllBuckets are the names of every bucket.
func AllBuckets() []string {
	out := make([]string, Buckets)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}
