package main

// mainUsage is the help of the program.
const mainUsage = `Usage: kopf COMMAND [OPTIONS]

Freeze and resume operators (kopf-go or Python Kopf) through their peering
objects, as Kopf's commands of the same names do.

Commands:
  freeze   write a peer record that pauses operators of lower or equal priority
  resume   remove that record, so that the paused operators resume

Run 'kopf COMMAND --help' for a command's options.
`

// usages are the helps of the commands.
var usages = map[string]string{
	"freeze": `Usage: kopf freeze --peering NAME --lifetime SECONDS [OPTIONS]

Writes this identity's record into the peering object(s) NAME. Operators
that use those objects and have a lower or equal priority pause until the
record expires (after the lifetime) or 'kopf resume' removes it.

Options:
  -P, --peering NAME         the peering object's name ($KOPF_FREEZE_PEERING)
  -t, --lifetime SECONDS     how long the record is valid; 0 removes it
  -p, --priority N           the record's priority (default 100)
      --dev                  priority 666, as operators' --dev
  -m, --message TEXT         why the operators are frozen (kept in the record)
  -i, --id ID                the record's identity (default: $POD_ID, or user@host)
  -n, --namespace NS         the KopfPeering in this namespace (repeatable)
  -A, --all-namespaces       the ClusterKopfPeering (also without --namespace)
      --kubeconfig PATH      the kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  -v, --verbose, -d, --debug print each patch
  -q, --quiet                print nothing on success

As in Kopf, every option can also come from $KOPF_FREEZE_<OPTION>
(e.g. KOPF_FREEZE_LIFETIME; namespaces: KOPF_FREEZE_NAMESPACES, separated by
spaces; -A: KOPF_FREEZE_CLUSTERWIDE).

Exit codes: 0 done, 1 failed (e.g. no such peering object), 2 usage error.
`,
	"resume": `Usage: kopf resume --peering NAME [OPTIONS]

Removes this identity's record from the peering object(s) NAME, so that the
operators that it paused resume.

Options:
  -P, --peering NAME         the peering object's name ($KOPF_RESUME_PEERING)
  -i, --id ID                the record's identity (default: $POD_ID, or user@host)
  -n, --namespace NS         the KopfPeering in this namespace (repeatable)
  -A, --all-namespaces       the ClusterKopfPeering (also without --namespace)
      --kubeconfig PATH      the kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  -v, --verbose, -d, --debug print each patch
  -q, --quiet                print nothing on success

As in Kopf, every option can also come from $KOPF_RESUME_<OPTION>
(e.g. KOPF_RESUME_ID; namespaces: KOPF_RESUME_NAMESPACES, separated by
spaces; -A: KOPF_RESUME_CLUSTERWIDE).

Exit codes: 0 done, 1 failed (e.g. no such peering object), 2 usage error.
`,
}
