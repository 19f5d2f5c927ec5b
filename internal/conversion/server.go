package conversion

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// DefaultMaxReviewBytes bounds a ConversionReview's body unless told
// otherwise. A review carries as many objects as the API server converts
// at once: one for a get or a watch event, a whole page (or a whole
// unpaginated list) for a list, which is why the bound is well above an
// admission review's. A list larger than that fails to convert; clients
// that page their lists (kubectl, informers that list with a limit) stay
// far below it.
const DefaultMaxReviewBytes = 64 << 20

// bodyTimeout bounds the reading of a review's body, as for admission
// reviews: the API server sends it at once.
const bodyTimeout = 30 * time.Second

// Server serves ConversionReviews (apiextensions.k8s.io/v1) with the
// registry's converters: one endpoint for every kind, as the review's
// objects say their kind.
type Server struct {
	Registry *Registry
	Logger   logr.Logger
	// MaxBytes bounds a review's body: DefaultMaxReviewBytes if zero.
	MaxBytes int64
	// Served, if set, counts the reviews that converted objects, by kind.
	Served *Served

	// bodyTimeout replaces the package's, for tests.
	bodyTimeout time.Duration
}

// ServeHTTP answers one review. A failed conversion is a review with
// result.status Failure (the API server shows its message); a call that is
// no review gets an HTTP error: 405 for other methods than POST, 400 for
// an empty or undecodable body, another content type than JSON, or a
// review without a request; 413 for a body over MaxBytes; 408 for a body
// not sent within 30 s.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "conversion reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	review, status, err := s.read(w, req)
	if err != nil {
		s.Logger.Error(err, "Bad conversion request", "path", req.URL.Path, "code", status)
		http.Error(w, err.Error(), status)
		return
	}
	resp := Review(req.Context(), s.Registry, s.Logger, review.Request)
	if resp.Result.Status == metav1.StatusSuccess && len(review.Request.Objects) > 0 {
		s.Served.Add(groupKindOf(review.Request.Objects[0]))
	}
	body, err := encode(review.TypeMeta, resp)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode the conversion review: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (s *Server) maxBytes() int64 { return cmp.Or(s.MaxBytes, DefaultMaxReviewBytes) }

// read checks the call's headers, then reads and decodes the review, at
// most maxBytes of it, within the body timeout.
func (s *Server) read(w http.ResponseWriter, req *http.Request) (*reviewIn, int, error) {
	limit := s.maxBytes()
	switch {
	case req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0:
		return nil, http.StatusBadRequest, errors.New("the request body is empty")
	case req.ContentLength > limit:
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the request body is too large: %d bytes, the limit is %d", req.ContentLength, limit)
	}
	contentType := req.Header.Get("Content-Type")
	if media, _, err := mime.ParseMediaType(contentType); err != nil || media != "application/json" {
		return nil, http.StatusBadRequest, fmt.Errorf("the content type is %q, want application/json", contentType)
	}
	timeout := cmp.Or(s.bodyTimeout, bodyTimeout)
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
	buf := bytes.NewBuffer(make([]byte, 0, max(req.ContentLength, 0)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, req.Body, limit))
	if deadline && err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the request body is too large: the limit is %d bytes", limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, http.StatusRequestTimeout, fmt.Errorf("read the conversion review: not sent within %s", timeout)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("read the conversion review: %w", err)
	}
	var review reviewIn
	if err := utiljson.Unmarshal(buf.Bytes(), &review); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("decode the conversion review: %w", err)
	}
	if review.Request == nil {
		return nil, http.StatusBadRequest, errors.New("the conversion review has no request")
	}
	return &review, 0, nil
}
