package admission

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// maxReviewBytes bounds a review's size (the API server's objects are at
// most a few megabytes; a review carries two of them).
const maxReviewBytes = 32 << 20

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
}

// ServeHTTP answers one review. Bad webhook calls get HTTP errors, as in
// Kopf: 400 for undecodable or incomplete reviews, 404 for resources
// without handlers, 409 for ambiguous ones.
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
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(io.LimitReader(req.Body, maxReviewBytes)).Decode(&review); err != nil {
		http.Error(w, fmt.Sprintf("decode the admission review: %v", err), http.StatusBadRequest)
		return
	}
	var peers []*x509.Certificate
	if req.TLS != nil {
		peers = req.TLS.PeerCertificates
	}
	ctx := logr.NewContext(req.Context(), s.Logger)
	resp, err := Review(ctx, s.Registry, s.Mapper, Input{
		Request:          review.Request,
		Hint:             Hint{Type: s.Type, ID: id},
		Headers:          req.Header.Clone(),
		PeerCertificates: peers,
	})
	if err != nil {
		s.Logger.Error(err, "Bad admission request", "path", req.URL.Path)
		http.Error(w, err.Error(), statusForError(err))
		return
	}
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
