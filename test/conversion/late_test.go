package conversion

import (
	"testing"
	"time"

	"github.com/kopf-go/kopf/pkg/kopftest"
)

// An operator started before its CRD is installed (both applied at once)
// configures the CRD once it is served, found by the retry interval, and
// then repairs drift as for a CRD that was there from the start.
func TestCRDInstalledLater(t *testing.T) {
	kopftest.NoLeaks(t)
	kind := kindOf("ConvLate")
	gk := groupKind(kind)
	c := conversions(t, env.Config, urlConfig(t), gk)
	c.RetryInterval = 200 * time.Millisecond
	start(t, c)
	newCRD(t, kind)
	name := crdName(gk)
	kopftest.Eventually(t, "the conversion is applied", timeout, func() bool { return webhookURL(get(t, name)) == hookURL })
	patch(t, name, "kubectl-edit", `{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
	kopftest.Eventually(t, "the drift is repaired", timeout, func() bool { return webhookURL(get(t, name)) == hookURL })
}
