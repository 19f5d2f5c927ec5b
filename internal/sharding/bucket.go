package sharding

import (
	"hash/fnv"
	"strconv"
)

// Buckets is how many buckets a ring's objects fall into by their names.
// Members own whole buckets, and a retired member's objects are adopted
// bucket by bucket, so that each adopter's cache selects its own buckets
// by a label instead of listing all the retired member's objects
// (docs/sharding.md, "Adoption"). 1,024 buckets give each of 4 members
// 256 ± 14, and each of 100 about 10 ± 3: finer buckets would balance a
// large ring better, but an adopter's selector names the other adopters'
// buckets, and 1,024 of them already take about 5 KB of its URL.
const Buckets = 1024

// Bucket is the bucket that the string (an object's namespace/name)
// falls into: a value of the ring's bucket label.
func Bucket(s string) string {
	h := fnv.New64a()
	h.Write([]byte(s))
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
