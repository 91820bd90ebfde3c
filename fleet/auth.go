package fleet

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// SecretEnv passes a job secret to every rank explicitly (mpirun -x NAME,
// srun's default --export=ALL). It is the only thing that authenticates the
// ranks: without it JobSecret derives a key from launcher values that other
// users of the hosts can read (ps, squeue), which keeps a stray rank of
// another job out but not a person.
const SecretEnv = "ERDMAKIT_FLEET_SECRET"

// jobVars are launcher variables every rank of one job sees with the same
// value: Open MPI's job id and mpirun's contact URI (it carries a random
// port), PMIx's namespace, Slurm's job and step. None is a secret: Open MPI
// puts them on orted's command line, Slurm shows them in squeue.
var jobVars = [...]string{
	"OMPI_MCA_orte_hnp_uri", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
	"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_NODELIST",
}

// JobSecret is the key the ranks' sessions are authenticated with: SecretEnv
// when set, else a hash of the launcher's job variables. source says which:
// SecretEnv (the ranks are authenticated), the first launcher variable found
// (not authenticated: the key binds a session to its job, but anyone who can
// read the job's process list can compute it), or "" and a nil key (ranks
// given by flags without SecretEnv: no key at all). getenv is os.Getenv in
// production.
func JobSecret(getenv func(string) string) (key []byte, source string) {
	if s := getenv(SecretEnv); s != "" {
		k := sha256.Sum256([]byte("erdmakit-fleet-secret\x00" + s))
		return k[:], SecretEnv
	}
	h := sha256.New()
	h.Write([]byte("erdmakit-fleet-job\x00"))
	found := ""
	for _, v := range jobVars {
		if s := getenv(v); s != "" {
			h.Write([]byte(v + "=" + s + "\x00"))
			if found == "" {
				found = v
			}
		}
	}
	if found == "" {
		return nil, ""
	}
	return h.Sum(nil), found
}

// A session is authenticated end to end. Rank 0 opens every connection with
// a fresh random challenge; the member answers with a hello carrying a nonce
// of its own. Both derive the session key
//
//	HMAC-SHA256(job key, "erdmakit-fleet-session" | challenge | nonce)
//
// and every frame after the challenge, the hello included, ends in a tag
//
//	HMAC-SHA256(session key, "erdmakit-fleet-frame" | sender | sequence u64 | type | body)
//
// so a frame is accepted only in the session, direction and place it was
// made for: a captured hello or report replayed to another job (or later in
// the same one), reordered, reflected or edited fails its tag.
const (
	nonceLen = 32
	tagLen   = sha256.Size
)

// Who sent a frame, in its tag.
const (
	fromRank0  byte = 0
	fromMember byte = 1
)

// ErrNotAuthentic: a frame whose tag does not match its session.
var ErrNotAuthentic = errors.New("fleet: frame not authenticated with the session's key (forged, replayed or edited in transit, or ranks launched with different " + SecretEnv + ")")

// newNonce returns a fresh random nonce, hex encoded.
func newNonce() (string, error) {
	b := make([]byte, nonceLen)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("fleet: no randomness for a session nonce: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// sessionKey derives a session's key from the job key (nil: an empty key,
// which checks integrity but authenticates nobody), rank 0's challenge and
// the member's nonce, both hex.
func sessionKey(jobKey []byte, challenge, nonce string) ([]byte, error) {
	c, err := hex.DecodeString(challenge)
	if err != nil || len(c) != nonceLen {
		return nil, fmt.Errorf("fleet: challenge %.80q is not %d hex bytes", challenge, nonceLen)
	}
	n, err := hex.DecodeString(nonce)
	if err != nil || len(n) != nonceLen {
		return nil, fmt.Errorf("fleet: hello nonce %.80q is not %d hex bytes", nonce, nonceLen)
	}
	m := hmac.New(sha256.New, jobKey)
	m.Write([]byte("erdmakit-fleet-session\x00"))
	m.Write(c)
	m.Write(n)
	return m.Sum(nil), nil
}

// frameTag is the tag of the seq-th frame from sender in a session.
func frameTag(key []byte, sender byte, seq uint64, t msgType, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	var hdr [len("erdmakit-fleet-frame\x00") + 1 + 8 + 1]byte
	n := copy(hdr[:], "erdmakit-fleet-frame\x00")
	hdr[n] = sender
	binary.BigEndian.PutUint64(hdr[n+1:], seq)
	hdr[n+9] = byte(t)
	m.Write(hdr[:])
	m.Write(body)
	return m.Sum(nil)
}
