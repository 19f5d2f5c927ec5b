package handlertest

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kopf-go/kopf/handlers"
)

// Convert returns a copy of the object converted to the version of its
// kind with the registry's converters (handlers.Converter,
// handlers.TypedConverter), as the operator's conversion webhook converts
// it for the API server, through a chain of converters where there is no
// direct one; the object itself is left as it is. A converter's error or
// panic is the error. Typed converters' kinds come from client-go's
// scheme; use ConvertWith for types of one's own.
func Convert(reg *handlers.Registry, obj *unstructured.Unstructured, version string) (*unstructured.Unstructured, error) {
	return ConvertWith(clientgoscheme.Scheme, reg, obj, version)
}

// ConvertWith is Convert with the scheme that knows the typed converters'
// types.
func ConvertWith(scheme *runtime.Scheme, reg *handlers.Registry, obj *unstructured.Unstructured, version string) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	if err := reg.Convert(context.Background(), scheme, out, version); err != nil {
		return nil, err
	}
	return out, nil
}
