package reactor

import "strings"

// versionReached reports whether the cached object's resourceVersion is at
// least the expected one. Versions from one API server compare as decimal
// integers (Kubernetes 1.35+ guarantees it); anything else is only ever
// "reached" by equality, and the consistency timeout covers the rest.
func versionReached(cached, expected string) bool {
	if cached == expected {
		return true
	}
	c, okc := decimal(cached)
	e, oke := decimal(expected)
	if !okc || !oke {
		return false
	}
	if len(c) != len(e) {
		return len(c) > len(e)
	}
	return c >= e
}

// decimal validates a resourceVersion as a decimal without leading zeros
// and returns it as a string, so that versions of any length compare.
func decimal(rv string) (string, bool) {
	if rv == "" || strings.HasPrefix(rv, "0") {
		return "", false
	}
	for _, r := range rv {
		if r < '0' || r > '9' {
			return "", false
		}
	}
	return rv, true
}
