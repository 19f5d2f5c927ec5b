package rbac

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// access is a verb on a resource (a subresource as "resource/sub") of an
// API group ("" for the core group).
type access struct{ group, resource, verb string }

func (a access) String() string {
	if a.group == "" {
		return a.verb + " " + a.resource
	}
	return a.verb + " " + a.resource + "." + a.group
}

// auditEvent is what the comparison reads of an audit event.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestURI string `json:"requestURI"`
}

func (e auditEvent) access() access {
	res := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		res += "/" + e.ObjectRef.Subresource
	}
	return access{e.ObjectRef.APIGroup, res, e.Verb}
}

func (e auditEvent) code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// readAudit reads the audit log's events of requests for resources (not
// discovery's paths).
func readAudit(t *testing.T) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatalf("read the audit log: %v", err)
	}
	defer func() { _ = f.Close() }()
	var out []auditEvent
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		var e auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatalf("read the audit log: %v", err)
		}
		if e.ObjectRef != nil && e.ObjectRef.Resource != "" {
			out = append(out, e)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatalf("read the audit log: %v", err)
	}
	if len(out) == 0 {
		t.Fatal("the audit log has no requests of ServiceAccounts")
	}
	return out
}

// compareWithAudit fails for every access that a source grants and that
// no user bound to it used (unless exempt), and for every request the API
// server refused. It logs what each source's accesses were used for.
func compareWithAudit(t *testing.T, held map[string]map[access][]string, events []auditEvent) {
	t.Helper()
	// used counts the answered (not refused) requests, by user and access.
	used := map[string]map[access]int{}
	for _, e := range events {
		if e.code() == 403 {
			t.Errorf("%s was refused %s (%s)", e.User.Username, e.access(), e.RequestURI)
			continue
		}
		if used[e.User.Username] == nil {
			used[e.User.Username] = map[access]int{}
		}
		used[e.User.Username][e.access()]++
	}
	for _, source := range slices.Sorted(maps.Keys(held)) {
		var report []string
		for _, a := range slices.SortedFunc(maps.Keys(held[source]), compareAccess) {
			users := slices.Compact(slices.Sorted(slices.Values(held[source][a])))
			n := 0
			for _, user := range users {
				n += used[user][a]
			}
			reason, exempt := exemptions[a]
			switch {
			case n > 0:
				report = append(report, fmt.Sprintf("%s: %d requests", a, n))
			case exempt:
				report = append(report, fmt.Sprintf("%s: not seen; %s", a, reason))
			default:
				t.Errorf("%s grants %s, which no operator bound to it used (%s): drop it, or add it to exemptions with the path that needs it",
					source, a, strings.Join(users, ", "))
			}
		}
		if len(report) > 0 {
			t.Logf("%s:\n  %s", source, strings.Join(report, "\n  "))
		}
	}
}

// compareAccess orders accesses by group, resource and verb.
func compareAccess(a, b access) int {
	return strings.Compare(a.group+"/"+a.resource+" "+a.verb, b.group+"/"+b.resource+" "+b.verb)
}

// expand lists the accesses of a rule.
func expand(groups, resources, verbs []string) []access {
	var out []access
	for _, g := range groups {
		for _, r := range resources {
			for _, v := range verbs {
				out = append(out, access{g, r, v})
			}
		}
	}
	return out
}

// exemptions are the verbs that the roles grant for paths the scenarios
// do not take, each with that path (docs/deploying.md's RBAC table says
// the same).
var exemptions = map[access]string{}
