package admission

import (
	"bytes"
	"cmp"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kopf-go/kopf/internal/tracing"
)

// MaxReviewBytes bounds a review's body, as controller-runtime's webhooks
// do: a review carries at most two objects of 3 MiB (what etcd keeps),
// and less than 1 MiB besides.
const MaxReviewBytes = 7 << 20

// DefaultMaxConcurrentReviews is how many reviews a Server serves at once
// unless told otherwise: enough for the API servers' bursts of usual
// reviews (of a few KiB), and, as a review over 1 MiB counts once per MiB
// begun, two of the largest reviews at once. A review holds 6 to 9 times
// its size in memory while its handlers run (its objects decoded;
// BenchmarkAdmissionReview in test/bench), so the reviews in flight hold
// at most some 130 MiB.
const DefaultMaxConcurrentReviews = 16

// bodyTimeout bounds the reading of a review's body, so that a caller who
// sends it slowly, or not at all, does not hold its place in the bound on
// concurrent reviews: the API server sends the body at once, and gives up
// after the webhook's timeout, which is 30 s at most.
const bodyTimeout = 30 * time.Second

// reviewUnit is the size of a review that counts as one against
// MaxConcurrent.
const reviewUnit = 1 << 20

// retryAfterSeconds is the Retry-After of a review refused for want of a
// slot. The API server's client retries such answers after that delay,
// within the webhook's timeout.
const retryAfterSeconds = "1"

// Server serves AdmissionReviews (v1, and v1beta1 which has the same shape)
// at <Prefix>/<handler id>, as Kopf's webhook servers do.
type Server struct {
	Registry *Registry
	// Prefix is the URL path the server is mounted at; what follows it is
	// the handler id. A request at the prefix itself serves every handler.
	Prefix string
	// Type, if set, serves only handlers of that type.
	Type Type
	// Mapper finds the kind of a requested resource; without one, requests
	// are matched by their kind.
	Mapper meta.RESTMapper
	Logger logr.Logger
	// MaxConcurrent bounds the reviews served at once (read, decoded, and
	// in their handlers), which bounds the memory they take: a review over
	// 1 MiB counts once per MiB begun (one of unknown length as one of
	// MaxReviewBytes), up to the whole bound. Zero means
	// DefaultMaxConcurrentReviews. A review beyond the bound is answered at
	// once with 429 Too Many Requests and a Retry-After of one second,
	// before its body is read; the API server retries it then.
	MaxConcurrent int
	// Tracer starts each review's span, under the API server's if the
	// request carries its traceparent (docs/tracing.md); zero: none.
	Tracer tracing.Tracer

	mu    sync.Mutex
	inUse int
	// bodyTimeout replaces the package's, for tests.
	bodyTimeout time.Duration
}

// ServeHTTP answers one review. Bad webhook calls get HTTP errors, as in
// Kopf and in Kubernetes' own webhook servers (Pod Security admission):
// 405 for other methods than POST; 400 for an empty body, another content
// type than JSON, or an undecodable or incomplete review; 413 for a body
// over MaxReviewBytes; 408 for a body not sent within 30 s; 404 for
// resources without handlers; 409 for ambiguous ones; 429 beyond
// MaxConcurrent reviews at once.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "admission reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	id, ok := idFromPath(req.URL.Path, s.Prefix)
	if !ok {
		http.NotFound(w, req)
		return
	}
	if status, err := checkHeaders(req); err != nil {
		s.refuse(w, req, status, err)
		return
	}
	weight := s.weight(req.ContentLength)
	if !s.acquire(weight) {
		s.Logger.V(1).Info("Too many admission reviews at once: refused, to be retried.", "path", req.URL.Path, "limit", s.limit())
		w.Header().Set("Retry-After", retryAfterSeconds)
		http.Error(w, "too many admission reviews at once", http.StatusTooManyRequests)
		return
	}
	defer s.release(weight)
	review, status, err := readReview(w, req, cmp.Or(s.bodyTimeout, bodyTimeout))
	if err != nil {
		s.refuse(w, req, status, err)
		return
	}
	s.answer(w, req, id, review)
}

// answer runs the review's handlers and writes the response.
func (s *Server) answer(w http.ResponseWriter, req *http.Request, id string, review *reviewIn) {
	var peers []*x509.Certificate
	if req.TLS != nil {
		peers = req.TLS.PeerCertificates
	}
	in := Input{Hint: Hint{Type: s.Type, ID: id}, Headers: req.Header.Clone(), PeerCertificates: peers}
	if review.Request != nil {
		in.Request, in.New, in.Old = &review.Request.AdmissionRequest, review.Request.Object, review.Request.OldObject
	}
	ctx, span := s.Tracer.Review(logr.NewContext(req.Context(), s.Logger), req.Header, req.URL.Path)
	resp, err := Review(ctx, s.Registry, s.Mapper, in)
	if err != nil {
		span.End(err)
		s.refuse(w, req, statusForError(err), err)
		return
	}
	if r := in.Request; r != nil {
		span.Reviewed(string(r.Operation), r.Kind.Kind, r.Namespace, r.Name, string(r.UID), resp.Allowed)
	}
	span.End(nil)
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion = admissionv1.SchemeGroupVersion.String()
	}
	if out.Kind == "" {
		out.Kind = "AdmissionReview"
	}
	body, err := json.Marshal(out)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode the admission review: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// refuse answers a bad webhook call with the status and logs it.
func (s *Server) refuse(w http.ResponseWriter, req *http.Request, status int, err error) {
	s.Logger.Error(err, "Bad admission request", "path", req.URL.Path, "code", status)
	http.Error(w, err.Error(), status)
}

// limit is the bound on concurrent reviews.
func (s *Server) limit() int {
	if s.MaxConcurrent > 0 {
		return s.MaxConcurrent
	}
	return DefaultMaxConcurrentReviews
}

// weight is how much of the bound a review of that length takes: one, or
// one per MiB begun, but never more than the whole bound, so that a large
// review is served when nothing else is.
func (s *Server) weight(length int64) int {
	if length < 0 || length > MaxReviewBytes {
		length = MaxReviewBytes
	}
	return min(max(1, int((length+reviewUnit-1)/reviewUnit)), s.limit())
}

// acquire takes that much of the bound, if it is free.
func (s *Server) acquire(weight int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse+weight > s.limit() {
		return false
	}
	s.inUse += weight
	return true
}

func (s *Server) release(weight int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse -= weight
}

// checkHeaders refuses, before anything is read, a call that cannot be a
// review: no body, a body declared too large, or not JSON.
func checkHeaders(req *http.Request) (int, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
		return http.StatusBadRequest, errors.New("the request body is empty")
	}
	if req.ContentLength > MaxReviewBytes {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("the request body is too large: %d bytes, the limit is %d", req.ContentLength, MaxReviewBytes)
	}
	contentType := req.Header.Get("Content-Type")
	if media, _, err := mime.ParseMediaType(contentType); err != nil || media != "application/json" {
		return http.StatusBadRequest, fmt.Errorf("the content type is %q, want application/json", contentType)
	}
	return 0, nil
}

// reviewIn is an AdmissionReview as the server decodes it: in one pass,
// with the objects straight into the maps that the handlers read, so
// that no raw copy of them is kept.
type reviewIn struct {
	metav1.TypeMeta
	Request *requestIn `json:"request"`
}

// requestIn is an AdmissionRequest whose objects are decoded (the
// embedded request's raw objects stay empty: these fields shadow them).
type requestIn struct {
	admissionv1.AdmissionRequest
	Object    map[string]any `json:"object"`
	OldObject map[string]any `json:"oldObject"`
}

// readReview reads and decodes the review, at most MaxReviewBytes of it,
// within the timeout.
func readReview(w http.ResponseWriter, req *http.Request, timeout time.Duration) (*reviewIn, int, error) {
	// Not every ResponseWriter has a connection (a recorder in tests).
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
	// Read into a buffer of the announced size, which the bound has
	// checked, rather than one that grows by copies.
	buf := bytes.NewBuffer(make([]byte, 0, max(req.ContentLength, 0)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, req.Body, MaxReviewBytes))
	body := buf.Bytes()
	if deadline && err == nil {
		// The connection may serve more reviews. (After an error, the
		// deadline stays, so that the connection is closed at once.)
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the request body is too large: the limit is %d bytes", MaxReviewBytes)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, http.StatusRequestTimeout, fmt.Errorf("read the admission review: not sent within %s", timeout)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("read the admission review: %w", err)
	}
	var review reviewIn
	if err := utiljson.Unmarshal(body, &review); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("decode the admission review: %w", err)
	}
	return &review, 0, nil
}

func statusForError(err error) int {
	var unknown *UnknownResourceError
	var ambiguous *AmbiguousResourceError
	switch {
	case errors.As(err, &unknown):
		return http.StatusNotFound
	case errors.As(err, &ambiguous):
		return http.StatusConflict
	}
	return http.StatusBadRequest
}
