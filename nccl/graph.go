package nccl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/erdmakit/erdmakit/erdma"
	"github.com/erdmakit/erdmakit/internal/atomicfile"
	"github.com/erdmakit/erdmakit/internal/ctxio"
)

// The graph file: NCCL_GRAPH_FILE names an XML file of topology graphs that
// NCCL loads instead of searching (src/graph/search.cc ncclTopoCompute,
// src/graph/xml.cc ncclTopoGetXmlGraphFromFile). With two eRDMA NICs at
// equal GPU<->NIC distance NCCL's search puts every GPU on the first NIC;
// Alibaba's erdma-controller runbook pins channel 0 to net dev 0 and channel
// 1 to net dev 1, every GPU in each, for the ring and tree graphs.

// ErrGraph is wrapped by every error about a graph file.
var ErrGraph = errors.New("nccl graph file")

// Graph ids and patterns as NCCL numbers them (src/init.cc: ring 0, tree 1,
// collnet chain 2, nvls 3, collnet direct 4; src/include/graph.h patterns).
const (
	GraphRing          = 0
	GraphTree          = 1
	GraphCollNetChain  = 2
	GraphNVLS          = 3
	GraphCollNetDirect = 4

	PatternBalancedTree  = 1
	PatternTree          = 3
	PatternRing          = 4
	PatternNVLS          = 5
	PatternCollNetDirect = 6
)

// GraphXMLVersion is the only <graphs version> NCCL accepts
// (NCCL_GRAPH_XML_VERSION).
const GraphXMLVersion = 1

// Bounds on what ParseGraph accepts; NCCL itself stops at 640 subnodes per
// node (MAX_SUBS) and 255-byte values (MAX_STR_LEN).
const (
	maxGraphNodes   = 1 << 14
	maxGraphSubs    = 640
	maxGraphValue   = 255
	maxGraphTagLine = 4096
)

// Graphs is an NCCL graph file: <graphs version="1"> and its graphs.
type Graphs struct {
	Version int         `json:"version"`
	Graphs  []TopoGraph `json:"graphs"`
}

// TopoGraph is one <graph>: NCCL replaces its own search for the graph of
// the same id when NChannels > 0.
type TopoGraph struct {
	ID           int           `json:"id"`
	Pattern      int           `json:"pattern"`
	CrossNIC     int           `json:"crossnic"`
	NChannels    int           `json:"nchannels"`
	SpeedIntra   string        `json:"speedintra"` // GB/s, kept as written ("17.5")
	SpeedInter   string        `json:"speedinter"`
	LatencyInter string        `json:"latencyinter"`
	TypeIntra    string        `json:"typeintra"` // LOC NVL NVB PIX PXB P2C PXN PHB SYS
	TypeInter    string        `json:"typeinter"`
	SameChannels int           `json:"samechannels"`
	Channels     []TopoChannel `json:"channels"`
}

// TopoChannel is one <channel>: the net device it enters by, the GPUs in
// ring order (NVML indexes, as NCCL's topology "dev"), the net device it
// leaves by; a missing net is -1.
type TopoChannel struct {
	NetIn  int   `json:"net_in"`
	GPUs   []int `json:"gpus"`
	NetOut int   `json:"net_out"`
}

// linkTypes are NCCL's kvDictLinkType names.
var linkTypes = []string{"LOC", "NVL", "NVB", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"}

// GraphPlan is what a host's graph file is built from.
type GraphPlan struct {
	// GPUs are the NVML indexes of the GPUs every channel goes through;
	// NCCL refuses a graph naming a GPU its communicator does not have
	// ("XML Import Channel : dev N not found"), so this must be the GPUs
	// the ranks on one host use.
	GPUs []int `json:"gpus"`
	// NICs are the eRDMA devices in the net dev order of the NCCL that
	// runs (NetDevOrder: by PCI bus id from NCCL 2.29.7, libibverbs'
	// device order before; never the order of the names in NCCL_IB_HCA):
	// channel i enters and leaves by NICs[i].
	NICs []string `json:"nics"`
	// NCCLVersion is the NCCL whose order NICs follow ("": unknown, taken
	// as >= 2.29.7); Order says that order in words.
	NCCLVersion string `json:"nccl_version,omitempty"`
	Order       string `json:"order,omitempty"`
	// NVLink: NVML reports NVLink between the GPUs, so the channels'
	// intra-node type is NVL; otherwise SYS (PCIe through the CPUs).
	NVLink bool `json:"nvlink,omitempty"`
}

// MultiNICGraph builds the runbook's graph for p: a ring graph (id 0) and a
// balanced-tree graph (id 1), one channel per NIC with every GPU in it. The
// other graphs (collnet, NVLS: ids 2-4) are left out, not written empty:
// NCCL's loader (src/graph/search.cc ncclTopoGetGraphFromXmlSub) copies a
// matching entry's pattern, types and samechannels into the graph even with
// nchannels 0 before it searches, so only an absent entry leaves NCCL's own
// search untouched. typeintra is NVL when p.NVLink (NCCL otherwise treats
// the GPUs as joined by PCIe), SYS without. It refuses fewer than two NICs
// (NCCL's own search is right then) and no GPU.
func MultiNICGraph(p GraphPlan) (*Graphs, error) {
	if len(p.NICs) < 2 {
		return nil, fmt.Errorf("%w: %d eRDMA NIC(s): a graph only helps with two or more", ErrGraph, len(p.NICs))
	}
	if len(p.GPUs) == 0 {
		return nil, fmt.Errorf("%w: no GPU: the GPU count must match the ranks per host or NCCL ignores the graph", ErrGraph)
	}
	seen := map[int]bool{}
	for _, g := range p.GPUs {
		if g < 0 || seen[g] {
			return nil, fmt.Errorf("%w: GPU index %d is negative or repeated", ErrGraph, g)
		}
		seen[g] = true
	}
	chans := func() []TopoChannel {
		cs := make([]TopoChannel, len(p.NICs))
		for i := range p.NICs {
			cs[i] = TopoChannel{NetIn: i, GPUs: append([]int(nil), p.GPUs...), NetOut: i}
		}
		return cs
	}
	intraType := "SYS"
	if p.NVLink {
		intraType = "NVL"
	}
	full := func(id, pattern int, intra string) TopoGraph {
		return TopoGraph{ID: id, Pattern: pattern, NChannels: len(p.NICs), SpeedIntra: intra, SpeedInter: "12",
			LatencyInter: "0", TypeIntra: intraType, TypeInter: "SYS", SameChannels: 1, Channels: chans()}
	}
	// The speeds are the runbook's (GB/s per channel); NCCL uses them
	// for its tuning model, not to pick the paths.
	return &Graphs{Version: GraphXMLVersion, Graphs: []TopoGraph{
		full(GraphRing, PatternRing, "12"),
		full(GraphTree, PatternBalancedTree, "17.5"),
	}}, nil
}

// PlanGraph decides whether a host gets a graph file and from what: two or
// more eRDMA devices with an ACTIVE port (in the net dev order of
// ncclVersion, NetDevOrder, as AdviseEnv picks them), the GPU count NVML saw, and
// whether NVML reports NVLink. It returns why not when the host does not
// qualify or the facts are missing.
func PlanGraph(inv *erdma.Inventory, ncclVersion string) (GraphPlan, error) {
	if inv == nil {
		return GraphPlan{}, fmt.Errorf("%w: no inventory", ErrGraph)
	}
	p := GraphPlan{NCCLVersion: ncclVersion, Order: NetDevOrderName(ncclVersion)}
	for _, d := range usableDevices(inv, ncclVersion) {
		p.NICs = append(p.NICs, d.Name)
	}
	if len(p.NICs) < 2 {
		return p, fmt.Errorf("%w: %d eRDMA device(s) with an ACTIVE port: NCCL's own choice is right with one", ErrGraph, len(p.NICs))
	}
	if inv.GPU == nil || !inv.GPU.Available || inv.GPU.Count <= 0 {
		why := "no GPU facts"
		if inv.GPU != nil && inv.GPU.Reason != "" {
			why = inv.GPU.Reason
		}
		return p, fmt.Errorf("%w: the GPU count is unknown (%s): a graph whose GPUs do not match is refused by NCCL", ErrGraph, why)
	}
	for i := 0; i < inv.GPU.Count; i++ {
		p.GPUs = append(p.GPUs, i)
	}
	p.NVLink = inv.GPU.NVLink == "yes"
	return p, nil
}

// GPUCount is the number of GPUs each channel of g's first non-empty
// graph goes through, 0 when none has a channel.
func (g *Graphs) GPUCount() int {
	for _, gr := range g.Graphs {
		if len(gr.Channels) > 0 {
			return len(gr.Channels[0].GPUs)
		}
	}
	return 0
}

// NetDevs returns the distinct net devs g's channels use, in first use order.
func (g *Graphs) NetDevs() []int {
	var out []int
	seen := map[int]bool{}
	for _, gr := range g.Graphs {
		for _, c := range gr.Channels {
			for _, n := range []int{c.NetIn, c.NetOut} {
				if !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// WriteTo writes g as the XML NCCL's loader reads: no prolog, spaces and
// newlines only (its parser knows no tabs), one space between attributes,
// dev numbers in hex as NCCL writes them (it reads them with base 16, so a
// decimal 10 would be GPU 16).
func (g *Graphs) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "<graphs version=\"%d\">\n", g.Version)
	for _, gr := range g.Graphs {
		fmt.Fprintf(&b, "  <graph id=\"%d\" pattern=\"%d\" crossnic=\"%d\" nchannels=\"%d\" speedintra=\"%s\" speedinter=\"%s\" latencyinter=\"%s\" typeintra=\"%s\" typeinter=\"%s\" samechannels=\"%d\"",
			gr.ID, gr.Pattern, gr.CrossNIC, gr.NChannels, gr.SpeedIntra, gr.SpeedInter, gr.LatencyInter, gr.TypeIntra, gr.TypeInter, gr.SameChannels)
		if len(gr.Channels) == 0 {
			b.WriteString("/>\n")
			continue
		}
		b.WriteString(">\n")
		for _, c := range gr.Channels {
			// A channel without a net (one host) has none: NCCL
			// writes them only for multi-node systems.
			b.WriteString("    <channel>\n")
			if c.NetIn >= 0 {
				fmt.Fprintf(&b, "      <net dev=\"%s\"/>\n", hexDev(c.NetIn))
			}
			b.WriteString("     ")
			for _, d := range c.GPUs {
				fmt.Fprintf(&b, " <gpu dev=\"%s\"/>", hexDev(d))
			}
			b.WriteString("\n")
			if c.NetOut >= 0 {
				fmt.Fprintf(&b, "      <net dev=\"%s\"/>\n", hexDev(c.NetOut))
			}
			b.WriteString("    </channel>\n")
		}
		b.WriteString("  </graph>\n")
	}
	b.WriteString("</graphs>\n")
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// hexDev formats a dev as NCCL's xmlSetAttrLong does ("%#lx": 0, 0x1, 0xa).
func hexDev(d int) string {
	if d == 0 {
		return "0"
	}
	return "0x" + strconv.FormatInt(int64(d), 16)
}

// ParseGraph reads an NCCL graph file: the subset of XML NCCL's own loader
// reads (elements, attributes, <!-- comments -->). It checks what NCCL
// checks (version 1, the attributes each graph must have, known link
// types, dev numbers) and is bounded in nodes, children and value length.
// Once ctx is done it returns ctx's error, even while r blocks.
func ParseGraph(ctx context.Context, r io.Reader) (*Graphs, error) {
	p := &graphParser{r: bufio.NewReader(ctxio.NewReader(ctx, r))}
	root, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGraph, err)
	}
	g, err := graphsFromXML(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGraph, err)
	}
	return g, nil
}

type xmlNode struct {
	name  string
	attrs map[string]string
	subs  []*xmlNode
}

type graphParser struct {
	r     *bufio.Reader
	nodes int
}

func (p *graphParser) parse() (*xmlNode, error) {
	var root *xmlNode
	var stack []*xmlNode
	for {
		tok, err := p.next()
		if err == io.EOF {
			if len(stack) > 0 {
				return nil, fmt.Errorf("unterminated <%s>", stack[len(stack)-1].name)
			}
			if root == nil {
				return nil, errors.New("no <graphs> element")
			}
			return root, nil
		}
		if err != nil {
			return nil, err
		}
		if tok.close {
			if len(stack) == 0 || stack[len(stack)-1].name != tok.node.name {
				return nil, fmt.Errorf("unexpected </%s>", tok.node.name)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		p.nodes++
		if p.nodes > maxGraphNodes {
			return nil, fmt.Errorf("more than %d elements", maxGraphNodes)
		}
		if len(stack) == 0 {
			if root != nil {
				return nil, fmt.Errorf("<%s> after the root element", tok.node.name)
			}
			root = tok.node
		} else {
			parent := stack[len(stack)-1]
			if len(parent.subs) == maxGraphSubs {
				return nil, fmt.Errorf("<%s> has more than %d children", parent.name, maxGraphSubs)
			}
			parent.subs = append(parent.subs, tok.node)
		}
		if !tok.single {
			if len(stack) == 4 {
				return nil, fmt.Errorf("<%s> nested deeper than graphs/graph/channel/net|gpu", tok.node.name)
			}
			stack = append(stack, tok.node)
		}
	}
}

type xmlToken struct {
	node          *xmlNode
	close, single bool
}

// next reads one tag, skipping whitespace and comments.
func (p *graphParser) next() (xmlToken, error) {
	for {
		c, err := p.r.ReadByte()
		if err != nil {
			return xmlToken{}, err
		}
		switch c {
		case ' ', '\n', '\r', '\t':
			continue
		case '<':
		default:
			return xmlToken{}, fmt.Errorf("expected '<', got %q", c)
		}
		tag, err := p.readTag()
		if err != nil {
			return xmlToken{}, err
		}
		if strings.HasPrefix(tag, "!--") {
			if err := p.skipComment(tag); err != nil {
				return xmlToken{}, err
			}
			continue
		}
		return parseTag(tag)
	}
}

// readTag reads up to the '>' closing a tag, quotes respected.
func (p *graphParser) readTag() (string, error) {
	var b strings.Builder
	var quote byte
	for {
		c, err := p.r.ReadByte()
		if err != nil {
			return "", errors.New("unterminated tag")
		}
		if b.Len() >= maxGraphTagLine {
			return "", fmt.Errorf("tag longer than %d bytes", maxGraphTagLine)
		}
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == '>':
			return b.String(), nil
		}
		b.WriteByte(c)
	}
}

func (p *graphParser) skipComment(tag string) error {
	// The tag was cut at the first '>': a comment ends at "-->".
	if strings.HasSuffix(tag, "--") && len(tag) >= 5 {
		return nil
	}
	tail := []byte(tag)
	for {
		c, err := p.r.ReadByte()
		if err != nil {
			return errors.New("unterminated comment")
		}
		tail = append(tail, c)
		if len(tail) > 3 {
			tail = tail[len(tail)-3:]
		}
		if string(tail) == "-->" {
			return nil
		}
	}
}

func parseTag(tag string) (xmlToken, error) {
	t := xmlToken{node: &xmlNode{attrs: map[string]string{}}}
	if strings.HasPrefix(tag, "/") {
		t.close = true
		t.node.name = strings.TrimSpace(tag[1:])
		return t, nil
	}
	if strings.HasSuffix(tag, "/") {
		t.single = true
		tag = tag[:len(tag)-1]
	}
	name, rest, _ := strings.Cut(tag, " ")
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, "=\"'?!") {
		return t, fmt.Errorf("bad element name %q", name)
	}
	t.node.name = name
	rest = strings.TrimSpace(rest)
	for rest != "" {
		key, after, ok := strings.Cut(rest, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" || len(after) == 0 || (after[0] != '"' && after[0] != '\'') {
			return t, fmt.Errorf("<%s>: attribute %q is not name=\"value\"", name, strings.TrimSpace(rest))
		}
		end := strings.IndexByte(after[1:], after[0])
		if end < 0 {
			return t, fmt.Errorf("<%s>: unterminated value of %s", name, key)
		}
		val := after[1 : 1+end]
		if len(val) > maxGraphValue {
			return t, fmt.Errorf("<%s>: value of %s longer than %d bytes", name, key, maxGraphValue)
		}
		if len(t.node.attrs) == 16 {
			return t, fmt.Errorf("<%s>: more than 16 attributes", name)
		}
		t.node.attrs[key] = val
		rest = strings.TrimSpace(after[2+end:])
	}
	return t, nil
}

func graphsFromXML(root *xmlNode) (*Graphs, error) {
	if root.name != "graphs" {
		return nil, fmt.Errorf("root element is <%s>, want <graphs>", root.name)
	}
	v, err := intAttr(root, "version")
	if err != nil {
		return nil, err
	}
	if v != GraphXMLVersion {
		return nil, fmt.Errorf("version %d: NCCL reads version %d only", v, GraphXMLVersion)
	}
	g := &Graphs{Version: v, Graphs: []TopoGraph{}}
	for _, n := range root.subs {
		if n.name != "graph" {
			return nil, fmt.Errorf("<graphs> holds <%s>, want <graph>", n.name)
		}
		gr, err := graphFromXML(n)
		if err != nil {
			return nil, err
		}
		if gr.Channels == nil {
			gr.Channels = []TopoChannel{} // JSON lists are [], never null
		}
		g.Graphs = append(g.Graphs, gr)
	}
	return g, nil
}

func graphFromXML(n *xmlNode) (TopoGraph, error) {
	var gr TopoGraph
	var err error
	ints := []struct {
		name string
		dst  *int
	}{{"id", &gr.ID}, {"pattern", &gr.Pattern}, {"crossnic", &gr.CrossNIC}, {"nchannels", &gr.NChannels}, {"samechannels", &gr.SameChannels}}
	for _, a := range ints {
		if *a.dst, err = intAttr(n, a.name); err != nil {
			return gr, err
		}
	}
	for _, a := range []struct {
		name string
		dst  *string
	}{{"speedintra", &gr.SpeedIntra}, {"speedinter", &gr.SpeedInter}} {
		s, ok := n.attrs[a.name]
		if _, perr := strconv.ParseFloat(s, 64); !ok || perr != nil {
			return gr, fmt.Errorf("graph %d: %s=%q is not a number", gr.ID, a.name, s)
		}
		*a.dst = s
	}
	gr.LatencyInter = n.attrs["latencyinter"] // optional in NCCL
	for _, a := range []struct {
		name string
		dst  *string
	}{{"typeintra", &gr.TypeIntra}, {"typeinter", &gr.TypeInter}} {
		s := n.attrs[a.name]
		if !slices.Contains(linkTypes, s) {
			return gr, fmt.Errorf("graph %d: %s=%q is not one of %s", gr.ID, a.name, s, strings.Join(linkTypes, " "))
		}
		*a.dst = s
	}
	for _, c := range n.subs {
		if c.name != "channel" {
			return gr, fmt.Errorf("graph %d holds <%s>, want <channel>", gr.ID, c.name)
		}
		ch, err := channelFromXML(gr.ID, c)
		if err != nil {
			return gr, err
		}
		gr.Channels = append(gr.Channels, ch)
	}
	return gr, nil
}

func channelFromXML(id int, n *xmlNode) (TopoChannel, error) {
	ch := TopoChannel{NetIn: -1, NetOut: -1, GPUs: []int{}}
	nets := 0
	for _, s := range n.subs {
		v, ok := s.attrs["dev"]
		if !ok {
			return ch, fmt.Errorf("graph %d: <%s> without dev", id, s.name)
		}
		// NCCL reads dev with strtol(str, NULL, 16).
		d, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X"), 16, 32)
		if err != nil || d < 0 {
			return ch, fmt.Errorf("graph %d: <%s dev=%q>: not a hex device number", id, s.name, v)
		}
		switch s.name {
		case "net":
			switch nets {
			case 0:
				ch.NetIn = int(d)
			case 1:
				ch.NetOut = int(d)
			default:
				return ch, fmt.Errorf("graph %d: a channel has more than two <net>", id)
			}
			nets++
		case "gpu":
			ch.GPUs = append(ch.GPUs, int(d))
		default:
			return ch, fmt.Errorf("graph %d: channel holds <%s>, want <net> or <gpu>", id, s.name)
		}
	}
	return ch, nil
}

func intAttr(n *xmlNode, name string) (int, error) {
	s, ok := n.attrs[name]
	if !ok {
		return 0, fmt.Errorf("<%s> has no %s", n.name, name)
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("<%s %s=%q>: not an integer", n.name, name, s)
	}
	return v, nil
}

// WriteFile writes g to path atomically (a temporary file in the same
// directory, then a rename), so a rank never reads half a graph; as every
// output erdmakit writes (internal/atomicfile): path must be absent or a
// regular file (a symlink, a FIFO or a device is refused), a new file's
// mode follows the umask and an existing one keeps its mode.
func (g *Graphs) WriteFile(path string) error {
	err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := g.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGraph, err)
	}
	return nil
}
