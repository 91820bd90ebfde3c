//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// healthyGPUs is what the ebmgn8is-healthy fixture's GPUs are: NVML bus ids
// and NUMA nodes.
var healthyGPUs = []struct {
	busID string
	numa  int
}{
	{"00000000:19:00.0", 0}, {"00000000:1A:00.0", 0}, {"00000000:3B:00.0", 0}, {"00000000:3C:00.0", 0},
	{"00000000:9D:00.0", 1}, {"00000000:9E:00.0", 1}, {"00000000:BB:00.0", 1}, {"00000000:BC:00.0", 1},
}

func busInfo(id string) gonvml.PciInfo {
	var p gonvml.PciInfo
	for i := 0; i < len(id); i++ {
		p.BusId[i] = int8(id[i])
	}
	return p
}

// mockNVML is a go-nvml mock of the healthy fixture's NVML; numa false
// makes nvmlDeviceGetNumaNodeId unsupported.
func mockNVML(numa bool) *mock.Interface {
	var devs []gonvml.Device
	for i, g := range healthyGPUs {
		g := g
		devs = append(devs, &mock.Device{
			GetNameFunc:        func() (string, gonvml.Return) { return "NVIDIA H20", gonvml.SUCCESS },
			GetUUIDFunc:        func() (string, gonvml.Return) { return "GPU-" + string(rune('a'+i)), gonvml.SUCCESS },
			GetPciInfoFunc:     func() (gonvml.PciInfo, gonvml.Return) { return busInfo(g.busID), gonvml.SUCCESS },
			GetMemoryInfoFunc:  func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{Total: 102625181696}, gonvml.SUCCESS },
			GetNvLinkStateFunc: func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED },
			GetNumaNodeIdFunc: func() (int, gonvml.Return) {
				if !numa {
					return 0, gonvml.ERROR_NOT_SUPPORTED
				}
				return g.numa, gonvml.SUCCESS
			},
		})
	}
	return &mock.Interface{
		InitFunc:                       func() gonvml.Return { return gonvml.SUCCESS },
		ShutdownFunc:                   func() gonvml.Return { return gonvml.SUCCESS },
		ErrorStringFunc:                func(r gonvml.Return) string { return returnName(r) },
		ExtensionsFunc:                 func() gonvml.ExtendedInterface { return nil },
		SystemGetDriverVersionFunc:     func() (string, gonvml.Return) { return "535.161.08", gonvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, gonvml.Return) { return 12020, gonvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, gonvml.Return) { return len(devs), gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (gonvml.Device, gonvml.Return) {
			return devs[i], gonvml.SUCCESS
		},
	}
}

func TestReadGPUsFromMock(t *testing.T) {
	lib := mockNVML(true)
	got, err := ReadGPUs(context.Background(), lib, hostRoot(t, "ebmgn8is-healthy"))
	require.NoError(t, err)
	assert.Equal(t, "535.161.08", got.DriverVersion)
	assert.Equal(t, 535, got.DriverMajor())
	assert.Equal(t, "12.2", got.CUDAVersion)
	require.Len(t, got.GPUs, 8)
	zero := 0
	assert.Equal(t, GPU{Index: 1, Name: "NVIDIA H20", UUID: "GPU-b", PCIAddress: "0000:1a:00.0",
		NUMANode: 0, NUMASource: "nvml", MemoryTotal: 102625181696, NVLinks: &zero}, got.GPUs[1])
	assert.Equal(t, SupportNo, got.NVLink(), "H20 boards here: NVML says NVLink is not supported")
	assert.Equal(t, "0000:bc:00.0", got.GPUs[7].PCIAddress)
	assert.Equal(t, 1, got.GPUs[7].NUMANode)
	assert.Empty(t, got.Warnings)
	assert.Len(t, lib.InitCalls(), 1)
	assert.Len(t, lib.ShutdownCalls(), 1, "ReadGPUs shuts NVML down again")
}

func TestReadGPUsNUMAFallsBackToSysfs(t *testing.T) {
	got, err := ReadGPUs(context.Background(), mockNVML(false), hostRoot(t, "ebmgn8is-healthy"))
	require.NoError(t, err)
	for i, g := range got.GPUs {
		assert.Equal(t, healthyGPUs[i].numa, g.NUMANode, "GPU%d", i)
		assert.Equal(t, "sysfs", g.NUMASource, "GPU%d", i)
	}
	// Without the sysfs tree the NUMA node is unknown, not an error.
	got, err = ReadGPUs(context.Background(), mockNVML(false), t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, -1, got.GPUs[0].NUMANode)
	assert.Empty(t, got.GPUs[0].NUMASource)
}

func TestReadGPUsSkipsMissingNumaSymbol(t *testing.T) {
	lib := mockNVML(true)
	lib.ExtensionsFunc = func() gonvml.ExtendedInterface {
		return &mock.ExtendedInterface{LookupSymbolFunc: func(string) error { return errors.New("undefined symbol") }}
	}
	got, err := ReadGPUs(context.Background(), lib, hostRoot(t, "ebmgn8is-healthy"))
	require.NoError(t, err)
	assert.Equal(t, "sysfs", got.GPUs[0].NUMASource)
}

func TestReadGPUsInitFailures(t *testing.T) {
	for _, tc := range []struct {
		code   gonvml.Return
		is     error
		reason string
	}{
		{gonvml.ERROR_DRIVER_NOT_LOADED, ErrNoDriver, "no NVIDIA driver"},
		{gonvml.ERROR_LIBRARY_NOT_FOUND, ErrLibraryNotFound, "libnvidia-ml not found"},
		{gonvml.ERROR_LIB_RM_VERSION_MISMATCH, ErrVersionMismatch, "driver/library version mismatch"},
		{gonvml.ERROR_NO_PERMISSION, ErrNoPermission, "insufficient permissions"},
		{gonvml.ERROR_UNKNOWN, ErrNVML, "NVML failed"},
	} {
		t.Run(returnName(tc.code), func(t *testing.T) {
			lib := mockNVML(true)
			lib.InitFunc = func() gonvml.Return { return tc.code }
			_, err := ReadGPUs(context.Background(), lib, t.TempDir())
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			var ie *InitError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, tc.reason, ie.Reason)
			assert.Equal(t, returnName(tc.code), ie.Code)
			assert.NotEmpty(t, ie.Remediation)
			assert.Empty(t, lib.ShutdownCalls(), "no Shutdown after a failed Init")
		})
	}
}

func TestReadGPUsMismatchByMessage(t *testing.T) {
	lib := mockNVML(true)
	lib.InitFunc = func() gonvml.Return { return gonvml.ERROR_UNKNOWN }
	lib.ErrorStringFunc = func(gonvml.Return) string { return "Driver/library version mismatch" }
	_, err := ReadGPUs(context.Background(), lib, t.TempDir())
	assert.ErrorIs(t, err, ErrVersionMismatch)
	assert.EqualError(t, err, "driver/library version mismatch: nvmlInit (ERROR_UNKNOWN: Driver/library version mismatch)")
}

func TestReadGPUsPerGPUFailures(t *testing.T) {
	lib := mockNVML(true)
	dev := &mock.Device{
		GetNameFunc:        func() (string, gonvml.Return) { return "", gonvml.ERROR_GPU_IS_LOST },
		GetUUIDFunc:        func() (string, gonvml.Return) { return "", gonvml.ERROR_GPU_IS_LOST },
		GetPciInfoFunc:     func() (gonvml.PciInfo, gonvml.Return) { return busInfo("garbage"), gonvml.SUCCESS },
		GetMemoryInfoFunc:  func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, gonvml.ERROR_GPU_IS_LOST },
		GetNumaNodeIdFunc:  func() (int, gonvml.Return) { return 0, gonvml.ERROR_GPU_IS_LOST },
		GetNvLinkStateFunc: func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_GPU_IS_LOST },
	}
	lib.DeviceGetCountFunc = func() (int, gonvml.Return) { return 1, gonvml.SUCCESS }
	lib.DeviceGetHandleByIndexFunc = func(int) (gonvml.Device, gonvml.Return) { return dev, gonvml.SUCCESS }
	lib.SystemGetCudaDriverVersionFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_FUNCTION_NOT_FOUND }
	got, err := ReadGPUs(context.Background(), lib, t.TempDir())
	require.NoError(t, err)
	require.Len(t, got.GPUs, 1)
	assert.Equal(t, -1, got.GPUs[0].NUMANode)
	assert.Empty(t, got.GPUs[0].PCIAddress)
	assert.Len(t, got.Warnings, 5) // CUDA version, name, UUID, bus id, memory
	assert.Contains(t, got.Warnings[0], "CUDA driver version")

	lib.DeviceGetCountFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_LIB_RM_VERSION_MISMATCH }
	_, err = ReadGPUs(context.Background(), lib, t.TempDir())
	assert.ErrorIs(t, err, ErrVersionMismatch)
}

func TestReadGPUsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ReadGPUs(ctx, mockNVML(true), t.TempDir())
	assert.ErrorIs(t, err, context.Canceled)
}

func TestFormatCUDAVersion(t *testing.T) {
	assert.Equal(t, "12.4", FormatCUDAVersion(12040))
	assert.Equal(t, "13.0", FormatCUDAVersion(13000))
	assert.Equal(t, "11.8", FormatCUDAVersion(11080))
	assert.Equal(t, "", FormatCUDAVersion(0))
}

func TestNVLinkCount(t *testing.T) {
	dev := func(f func(int) (gonvml.EnableState, gonvml.Return)) *mock.Device {
		return &mock.Device{GetNvLinkStateFunc: f}
	}
	four := dev(func(l int) (gonvml.EnableState, gonvml.Return) {
		if l < 4 {
			return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
		}
		return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
	})
	require.NotNil(t, nvLinks(four))
	assert.Equal(t, 4, *nvLinks(four))
	none := dev(func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED })
	assert.Equal(t, 0, *nvLinks(none))
	lost := dev(func(int) (gonvml.EnableState, gonvml.Return) { return 0, gonvml.ERROR_GPU_IS_LOST })
	assert.Nil(t, nvLinks(lost))

	n0, n4 := 0, 4
	assert.Equal(t, SupportNo, (&GPUs{GPUs: []GPU{{NVLinks: &n0}, {NVLinks: &n0}}}).NVLink())
	assert.Equal(t, SupportYes, (&GPUs{GPUs: []GPU{{NVLinks: &n0}, {NVLinks: &n4}}}).NVLink())
	assert.Equal(t, SupportUnknown, (&GPUs{GPUs: []GPU{{NVLinks: &n0}, {}}}).NVLink())
	assert.Equal(t, SupportUnknown, (*GPUs)(nil).NVLink())

	// A snapshot replays what was captured.
	s := &Snapshot{Schema: SnapshotSchema, Init: "SUCCESS", DriverVersion: "570.133.20",
		GPUs: []SnapshotGPU{{Name: "NVIDIA RTX PRO 5000 Blackwell", PCIBusID: "00000000:17:00.0", NVLinks: &n0}}}
	got, err := ReadGPUs(context.Background(), s.Library(), t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, SupportNo, got.NVLink())
	captured, err := Capture(context.Background(), s.Library(), "again")
	require.NoError(t, err)
	assert.Equal(t, &n0, captured.GPUs[0].NVLinks)
	s.GPUs[0].NVLinks = nil
	got, err = ReadGPUs(context.Background(), s.Library(), t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, SupportUnknown, got.NVLink(), "an older recording: not known")
}

// TestGPUPrints: issue 26 item 5. NVLinks is nil when NVML could not say
// (the JSON leaves it out): %v prints "?", never an address.
func TestGPUPrints(t *testing.T) {
	n := 18
	g := GPU{Index: 0, Name: "NVIDIA H20", PCIAddress: "0000:17:00.0", NUMANode: 0, NVLinks: &n}
	assert.Equal(t, "GPU0 NVIDIA H20 0000:17:00.0 NUMA 0 NVLinks 18", fmt.Sprintf("%v", g))
	g.NVLinks = nil
	assert.Equal(t, "GPU0 NVIDIA H20 0000:17:00.0 NUMA 0 NVLinks ?", fmt.Sprint(g))
}
