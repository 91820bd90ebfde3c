// Package kube puts erdmakit's answers on Kubernetes: the doctor's verdict on
// the node it ran on (the node condition ERDMAReady and the labels a training
// job's node affinity can require, patched only when they change and
// refreshed on a period: NodeAgent), and an Indexed Job's place for fleet
// prove (JobRankOf: the rank from JOB_COMPLETION_INDEX, the size from the Job,
// rank 0's address from its pod, read through the API without cluster DNS).
//
// It talks to the API server with a small client of its own over net/http
// (Client: the pod's service-account token and CA, a few GETs and PATCHes)
// rather than k8s.io/client-go, which would add tens of megabytes of
// dependencies for five calls. Every answer of the server is treated as
// hostile input: bounded in size and time, decoded into the few fields used,
// and an error names the request and quotes (escaped) what came back.
//
// Setting a node up stays Alibaba's ack-erdma-controller's job (it attaches
// the ERIs, installs the driver, advertises aliyun/erdma); ControllerStep
// names its step for the checks it owns, so that the doctor running in a pod
// points there rather than at the host commands.
package kube
