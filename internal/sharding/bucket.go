package sharding

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
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
	n, ok := bucketNumber(value)
	return ok && strconv.FormatUint(n, 10) == value
}

// AllBuckets are the names of every bucket.
func AllBuckets() []string {
	out := make([]string, Buckets)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// BucketSet is a set of buckets, one bit each.
type BucketSet [Buckets / 64]uint64

// Add puts the bucket with the given name into the set; a name that is
// no bucket is left out.
func (s *BucketSet) Add(bucket string) {
	if n, ok := bucketNumber(bucket); ok {
		s[n/64] |= 1 << (n % 64)
	}
}

// Has reports whether the bucket with the given name is in the set.
func (s *BucketSet) Has(bucket string) bool {
	n, ok := bucketNumber(bucket)
	return ok && s[n/64]&(1<<(n%64)) != 0
}

// Empty reports whether the set holds no bucket.
func (s *BucketSet) Empty() bool { return *s == BucketSet{} }

// String writes the set as unpadded URL-safe base64 of its bits, bucket
// 0 first: 171 characters, whatever it holds.
func (s *BucketSet) String() string {
	raw := make([]byte, 0, Buckets/8)
	for _, word := range s {
		raw = binary.LittleEndian.AppendUint64(raw, word)
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

// ParseBucketSet reads what BucketSet.String wrote.
func ParseBucketSet(text string) (BucketSet, error) {
	var s BucketSet
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(raw) != Buckets/8 {
		return s, fmt.Errorf("not a set of %d buckets: %q", Buckets, text)
	}
	for i := range s {
		s[i] = binary.LittleEndian.Uint64(raw[i*8:])
	}
	return s, nil
}

// bucketNumber is the number that a bucket's name holds.
func bucketNumber(bucket string) (uint64, bool) {
	n, err := strconv.ParseUint(bucket, 10, 16)
	return n, err == nil && n < Buckets
}
