package peering

import (
	"math/rand/v2"
	"os"
	"os/user"
	"time"
)

// Identity returns this process's peer identity, as Kopf forms it: the
// environment variable POD_ID if set (the pod's name, in a cluster), else
// user@host/YYYYMMDDHHMMSS/xyz; for manual commands (freeze, resume),
// user@host.
func Identity(manual bool, now time.Time) string {
	if pod, ok := os.LookupEnv("POD_ID"); ok {
		return pod
	}
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	if manual {
		return name + "@" + host
	}
	const letters = "abcdefhijklmnopqrstuvwxyz0123456789"
	suffix := make([]byte, 3)
	for i := range suffix {
		suffix[i] = letters[rand.IntN(len(letters))]
	}
	return name + "@" + host + "/" + now.UTC().Format("20060102150405") + "/" + string(suffix)
}
