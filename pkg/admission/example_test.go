package admission_test

import (
	"errors"
	"fmt"

	"github.com/kopf-go/kopf/pkg/admission"
)

// A webhook handler denies a request with a code for the API client;
// any other error denies it with 500.
func ExampleError() {
	var err error = admission.Error{Message: "spec.size must be small or large", Code: 422}
	var denial admission.Error
	fmt.Println(errors.As(err, &denial), denial.Code, err)
	// Output:
	// true 422 spec.size must be small or large
}
