package nvml

import (
	"fmt"
	"strconv"
	"strings"
)

// NormalizeBusID turns a PCI address as NVML, nvidia-smi or sysfs write it
// into the sysfs form "0000:17:00.0": NVML's 8-digit domain
// ("00000000:17:00.0") is cut to 4 digits, hex is lower-cased, and a
// missing domain ("17:00.0") means domain 0.
func NormalizeBusID(s string) (string, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return "", fmt.Errorf("PCI bus id %q: empty", s)
	}
	parts := strings.Split(in, ":")
	var dom, bus, devfn string
	switch len(parts) {
	case 3:
		dom, bus, devfn = parts[0], parts[1], parts[2]
	case 2:
		dom, bus, devfn = "0", parts[0], parts[1]
	default:
		return "", fmt.Errorf("PCI bus id %q: want [domain:]bus:device.function", s)
	}
	dev, fn, ok := strings.Cut(devfn, ".")
	if !ok {
		return "", fmt.Errorf("PCI bus id %q: no function after the device", s)
	}
	d, err1 := parseHex(dom, 32)
	b, err2 := parseHex(bus, 8)
	v, err3 := parseHex(dev, 5)
	f, err4 := parseHex(fn, 3)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return "", fmt.Errorf("PCI bus id %q: %w", s, err)
		}
	}
	if d > 0xffff {
		return "", fmt.Errorf("PCI bus id %q: domain %#x does not fit sysfs's 4 digits", s, d)
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, v, f), nil
}

func parseHex(s string, bits int) (uint64, error) {
	if s == "" || len(s) > 8 {
		return 0, fmt.Errorf("bad hex field %q", s)
	}
	v, err := strconv.ParseUint(s, 16, bits)
	if err != nil {
		return 0, fmt.Errorf("bad hex field %q", s)
	}
	return v, nil
}
