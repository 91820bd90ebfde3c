// Package eri is the cloud side of eRDMA on Alibaba Cloud: the instance's
// elastic network interfaces as the ECS OpenAPI (version 2014-05-26) sees
// them, the eRDMA interfaces (ERIs: ENIs in HighPerformance traffic mode)
// among them, attaching the missing ones each on its own network-card
// channel, converting an ENI, and configuring the ERIs' netdevs inside the OS.
//
// Calls go through the official SDK (github.com/alibabacloud-go/ecs-20140526)
// with credentials from github.com/aliyun/credentials-go's default chain
// (environment keys, the aliyun CLI profile, OIDC/RRSA, the instance RAM role
// through the metadata service). A View, the cloud's answer, carries no
// credential and can be stored with a recorded host.
//
// The cloud side builds and works on any OS; Configure, which configures
// the ERIs' netdevs through netlink, answers erdma.ErrNotLinux outside Linux.
package eri
