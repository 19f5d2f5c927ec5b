package registry

// KindOf returns the kind that a handlers.Resource registers its handlers
// in, or nil for anything else. Package handlers sets it, as it keeps
// the kind unexported: the toolkits (pkg/handlertest) run what a resource
// registered without a manager through it, and nothing else uses it.
var KindOf = func(resource any) *Kind { return nil }
