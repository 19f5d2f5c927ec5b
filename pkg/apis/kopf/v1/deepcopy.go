package v1

import "k8s.io/apimachinery/pkg/runtime"

// DeepCopy copies a peer record.
func (p *Peer) DeepCopy() *Peer {
	if p == nil {
		return nil
	}
	out := *p
	if p.Lifetime != nil {
		lifetime := *p.Lifetime
		out.Lifetime = &lifetime
	}
	return &out
}

func copyStatus(in map[string]*Peer) map[string]*Peer {
	if in == nil {
		return nil
	}
	out := make(map[string]*Peer, len(in))
	for k, v := range in {
		out[k] = v.DeepCopy()
	}
	return out
}

// DeepCopy copies the object.
func (p *KopfPeering) DeepCopy() *KopfPeering {
	if p == nil {
		return nil
	}
	out := &KopfPeering{TypeMeta: p.TypeMeta, Status: copyStatus(p.Status)}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// DeepCopyObject copies the object; a nil object copies to a nil
// interface, as generated deep copies do.
func (p *KopfPeering) DeepCopyObject() runtime.Object {
	if c := p.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyObject copies the list.
func (l *KopfPeeringList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &KopfPeeringList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil { // an empty list stays empty, not nil
		out.Items = make([]KopfPeering, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return out
}

// DeepCopy copies the object.
func (p *ClusterKopfPeering) DeepCopy() *ClusterKopfPeering {
	if p == nil {
		return nil
	}
	out := &ClusterKopfPeering{TypeMeta: p.TypeMeta, Status: copyStatus(p.Status)}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// DeepCopyObject copies the object; a nil object copies to a nil
// interface, as generated deep copies do.
func (p *ClusterKopfPeering) DeepCopyObject() runtime.Object {
	if c := p.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyObject copies the list.
func (l *ClusterKopfPeeringList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &ClusterKopfPeeringList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil { // an empty list stays empty, not nil
		out.Items = make([]ClusterKopfPeering, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return out
}
