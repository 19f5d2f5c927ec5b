package hierarchies

// AdjustNamespace puts child into namespace, as Kopf's adjust_namespace:
// only if the child has no namespace yet, or if Forced. An empty namespace
// (a cluster-scoped owner's) leaves an unset namespace unset, and with
// Forced clears the child's namespace, as Kopf sets it to None.
func AdjustNamespace(child Object, namespace string, opts ...NamespaceOption) {
	adjustNamespace(child, namespace, newConfig(opts))
}

// adjustNamespace is AdjustNamespace with the options applied, shared with
// Adopt.
func adjustNamespace(child Object, namespace string, c *config) {
	if c.forced || child.GetNamespace() == "" {
		child.SetNamespace(namespace)
	}
}
