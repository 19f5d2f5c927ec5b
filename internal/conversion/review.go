package conversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReviewVersion is the one version of ConversionReview served (what the
// managed spec.conversion's conversionReviewVersions lists).
const ReviewVersion = "v1"

// reviewIn is a ConversionReview as the server decodes it: the objects
// straight into maps, in one pass, with no raw copy kept.
type reviewIn struct {
	metav1.TypeMeta
	Request *requestIn `json:"request"`
}

type requestIn struct {
	UID               string           `json:"uid"`
	DesiredAPIVersion string           `json:"desiredAPIVersion"`
	Objects           []map[string]any `json:"objects"`
}

// reviewOut is the response's ConversionReview; the objects are encoded
// from the maps they were converted in.
type reviewOut struct {
	metav1.TypeMeta `json:",inline"`
	Response        *responseOut `json:"response"`
}

type responseOut struct {
	UID              string           `json:"uid"`
	ConvertedObjects []map[string]any `json:"convertedObjects"`
	Result           metav1.Status    `json:"result"`
}

// Review converts a review's objects, all of them or none: the response is
// a Success with every object converted to the desired version, or a
// Failure whose message names the first object that failed, its versions
// and why (the API server then fails the request that needed it). Each
// failure is logged, a panic with its stack.
func Review(ctx context.Context, reg *Registry, log logr.Logger, req *requestIn) *responseOut {
	resp := &responseOut{UID: req.UID, ConvertedObjects: []map[string]any{}}
	fail := func(err error) *responseOut {
		resp.ConvertedObjects = []map[string]any{}
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		return resp
	}
	desired, err := schema.ParseGroupVersion(req.DesiredAPIVersion)
	if err != nil || desired.Version == "" {
		return fail(fmt.Errorf("the desired apiVersion %q is not a group/version", req.DesiredAPIVersion))
	}
	for i, body := range req.Objects {
		obj := &unstructured.Unstructured{Object: body}
		if body == nil {
			return fail(fmt.Errorf("object %d of the review is empty", i))
		}
		gk := groupKindOf(body)
		if gk.Group != desired.Group {
			return fail(fmt.Errorf("object %d of the review is of group %q, the desired apiVersion %s of another", i, gk.Group, req.DesiredAPIVersion))
		}
		k := reg.Kind(gk)
		if k == nil {
			err := fmt.Errorf("convert %s %s to %s: the operator has no converters for the kind", gk, objectName(obj), desired.Version)
			log.Error(err, "Conversion failed.")
			return fail(err)
		}
		if err := k.Convert(ctx, obj, desired.Version); err != nil {
			logFailure(log, err)
			return fail(err)
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, obj.Object)
	}
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}

// groupKindOf is the kind of an object of a review.
func groupKindOf(body map[string]any) schema.GroupKind {
	obj := &unstructured.Unstructured{Object: body}
	gv, _ := schema.ParseGroupVersion(obj.GetAPIVersion())
	return schema.GroupKind{Group: gv.Group, Kind: obj.GetKind()}
}

// logFailure logs a failed conversion, a panic with its stack.
func logFailure(log logr.Logger, err error) {
	var ce *Error
	if errors.As(err, &ce) {
		log = log.WithValues("kind", ce.GroupKind.String(), "object", ce.Object, "from", ce.From, "to", ce.To)
		if ce.Converter != nil {
			log = log.WithValues("converter", ce.Converter.Name())
		}
		if p := ce.Panic(); p != nil {
			log.Error(err, "Converter panicked; the conversion fails.", "stack", string(p.Stack))
			return
		}
	}
	log.Error(err, "Conversion failed.")
}

// encode renders the response's ConversionReview, of the request's
// apiVersion and kind (apiextensions.k8s.io/v1 ConversionReview).
func encode(in metav1.TypeMeta, resp *responseOut) ([]byte, error) {
	out := reviewOut{TypeMeta: in, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
	}
	if out.Kind == "" {
		out.Kind = "ConversionReview"
	}
	return json.Marshal(out)
}
