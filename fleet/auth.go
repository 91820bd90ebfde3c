package fleet

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// SecretEnv passes a job secret to every rank explicitly (mpirun -x, srun
// --export); without it JobSecret derives one from the launcher's job.
const SecretEnv = "ERDMAKIT_FLEET_SECRET"

// jobVars are launcher variables every rank of one job sees with the same
// value: Open MPI's job id and mpirun's contact URI (it carries a random
// port), PMIx's namespace, Slurm's job and step.
var jobVars = [...]string{
	"OMPI_MCA_orte_hnp_uri", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
	"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_JOB_NODELIST",
}

// JobSecret is the key ranks authenticate their hellos with: SecretEnv when
// set, else a hash of the launcher's job variables, so that a process
// outside the job cannot claim a rank. source says which ("" and a nil key
// when there is none: ranks given by flags without SecretEnv, where any
// hello is taken at its word). getenv is os.Getenv in production.
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

// helloMAC authenticates a hello's identity (rank, size, host) with key.
func helloMAC(key []byte, h helloMsg) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("erdmakit-fleet-hello\x00" + strconv.Itoa(h.Rank) + "\x00" + strconv.Itoa(h.Size) + "\x00" + h.Host))
	return hex.EncodeToString(m.Sum(nil))
}

// authentic reports whether h carries key's MAC; with no key every hello is.
func authentic(key []byte, h helloMsg) bool {
	if key == nil {
		return true
	}
	return hmac.Equal([]byte(h.Auth), []byte(helloMAC(key, h)))
}
