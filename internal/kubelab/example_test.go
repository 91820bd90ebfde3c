package kubelab_test

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/erdmakit/erdmakit/internal/kubelab"
)

// A lab with one real node that advertises aliyun/erdma and two kwok
// nodes; a pod of the erdmakit image, its log read back.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "kubelab")
	defer os.RemoveAll(dir)
	c, err := kubelab.Start(ctx, kubelab.Options{
		Dir:          dir,
		NodeCapacity: map[string]string{"aliyun/erdma": "1"},
		FakeNodes:    []kubelab.FakeNode{{Name: "gpu-1", Capacity: map[string]string{"aliyun/erdma": "1"}}, {Name: "gpu-2"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if _, err := c.ImportImage(ctx, "bin/kubelab/erdmakit-image.tar"); err != nil {
		fmt.Println(err)
		return
	}
	pod := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "v", "namespace": "default"},
	  "spec": {"hostNetwork": true, "restartPolicy": "Never", "nodeName": "kubelab",
	    "containers": [{"name": "v", "image": "` + kubelab.ErdmakitImage + `", "command": ["erdmakit", "version"]}]}}`
	if _, err := c.KubectlWithInput(ctx, []byte(pod), "apply", "-f", "-"); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.WaitForPodPhase(ctx, "default", "v", time.Minute, "Succeeded"); err != nil {
		fmt.Println(err)
		return
	}
	log, _ := c.PodLogs("default", "v")
	fmt.Print(log)
}

// WriteImage packs files into an image archive that ctr, podman and docker
// import.
func ExampleWriteImage() {
	dir, _ := os.MkdirTemp("", "image")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "hello"), []byte("#!/bin/sh\necho hello\n"), 0o755)
	archive := filepath.Join(dir, "hello.tar")
	err := kubelab.WriteImage(archive, kubelab.Image{
		Ref:        "localhost/hello:1",
		Files:      map[string]string{"usr/bin/hello": filepath.Join(dir, "hello")},
		Entrypoint: []string{"/usr/bin/hello"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	f, _ := os.Open(archive)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Name == "manifest.json" {
			var m []struct{ RepoTags, Layers []string }
			_ = json.NewDecoder(tr).Decode(&m)
			fmt.Println(m[0].RepoTags, len(m[0].Layers), "layer")
		}
	}
	// Output: [localhost/hello:1] 1 layer
}
