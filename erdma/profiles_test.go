package erdma

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseInstanceType(t *testing.T) {
	for _, tc := range []struct {
		in                 string
		family, base, size string
		bad                bool
	}{
		{in: "ecs.ebmgn8is.32xlarge", family: "ebmgn8is", base: "ebmgn8is", size: "32xlarge"},
		{in: " ECS.gn8is-2x.8xlarge\n", family: "gn8is-2x", base: "gn8is", size: "8xlarge"},
		{in: "ecs.ebmgn9gc.64xlarge", family: "ebmgn9gc", base: "ebmgn9gc", size: "64xlarge"},
		{in: "ecs.g7.large", family: "g7", base: "g7", size: "large"},
		{in: "ebmgn8is.32xlarge", bad: true},
		{in: "ecs.ebmgn8is", bad: true},
		{in: "ecs..large", bad: true},
		{in: "ecs.ebm gn8is.large", bad: true},
		{in: "ecs.a.b.c", bad: true},
		{in: "", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseInstanceType(tc.in)
			if tc.bad {
				require.ErrorIs(t, err, ErrInstanceType)
				assert.Contains(t, err.Error(), "instance type")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, InstanceType{Family: tc.family, Base: tc.base, Size: tc.size}, got)
		})
	}
}

func TestLookupProfile(t *testing.T) {
	for _, tc := range []struct {
		typ    string
		ok     bool
		family string
		eris   int
		gbps   float64
	}{
		{"ecs.ebmgn9gc.64xlarge", true, "ebmgn9gc", 2, 380},
		{"ecs.gn8is-2x.8xlarge", true, "gn8is-2x", 1, 25},
		{"ecs.gn8is-4x.16xlarge", true, "gn8is", 1, 0}, // base family + the size's row (section 10)
		{"ecs.gn8is-8x.32xlarge", true, "gn8is", 0, 0}, // ERI count not published: unknown
		{"ecs.ebmgn8is.32xlarge", true, "ebmgn8is", 2, 0},
		{"ecs.ebmgn8is.16xlarge", true, "ebmgn8is", 0, 0}, // no row for the size: family only
		{"ecs.ebmgn7ex.32xlarge", true, "ebmgn7ex", 2, 0},
		{"ecs.ebmgn8v.48xlarge", true, "ebmgn8v", 2, 0},
		{"ecs.ebmgn9ge.48xlarge", true, "ebmgn9ge", 0, 0},
		{"ecs.g7.large", false, "", 0, 0},
		{"ecs.ebmgn9.large", false, "", 0, 0},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			p, ok, err := LookupProfile(tc.typ)
			require.NoError(t, err)
			assert.Equal(t, tc.ok, ok)
			if !ok {
				assert.Nil(t, p)
				return
			}
			assert.Equal(t, tc.family, p.Family)
			assert.Equal(t, tc.eris, p.ERIs)
			assert.Equal(t, tc.gbps, p.WriteGbps)
			assert.NotEmpty(t, p.Source, "every profile names its source")
		})
	}
	p, _, _ := LookupProfile("ecs.ebmgn9gc.64xlarge")
	assert.Equal(t, Profile{Family: "ebmgn9gc", Type: "ecs.ebmgn9gc.64xlarge", ERIs: 2, GPUs: 8, GPUModel: "72 GB",
		NetGbps: 360, WriteGbps: 380, Source: p.Source}, *p, "the size's row merged with the family's measured figures")
	assert.Contains(t, p.Source, "section 10")
	assert.Contains(t, p.Source, "data-on-ack")
	for typ, row := range typeProfiles() {
		fam, ok, err := LookupProfile(typ)
		require.NoError(t, err, typ)
		require.True(t, ok, "every row's family is known: %s", typ)
		assert.Equal(t, row.GPUs, fam.GPUs, typ)
		assert.NotEmpty(t, row.Source, typ)
	}
	_, _, err := LookupProfile("nonsense")
	assert.ErrorIs(t, err, ErrInstanceType)
}

func TestKnownFamiliesMatchTable(t *testing.T) {
	fams := KnownFamilies()
	assert.Len(t, profiles(), len(fams))
	for _, f := range fams {
		p, ok := profiles()[f]
		require.True(t, ok, f)
		assert.Equal(t, f, p.Family)
	}
}

func TestSetInstance(t *testing.T) {
	inv := &Inventory{}
	SetInstance(inv, &Instance{Type: "ecs.ebmgn9gc.64xlarge", Source: "flag"})
	require.NotNil(t, inv.Profile)
	assert.Equal(t, 2, inv.Profile.ERIs)
	SetInstance(inv, &Instance{Type: "ecs.g7.large", Source: "flag"})
	assert.Nil(t, inv.Profile)
	assert.Equal(t, "ecs.g7.large", inv.Instance.Type)
	SetInstance(inv, nil)
	assert.Nil(t, inv.Instance)
}

func FuzzParseInstanceType(f *testing.F) {
	for _, s := range []string{"ecs.ebmgn8is.32xlarge", "ecs.gn8is-2x.8xlarge", "ecs..", "ecs.a-1x-2x.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		it, err := ParseInstanceType(s)
		if err != nil {
			return
		}
		again, err := ParseInstanceType(it.String())
		require.NoError(t, err)
		assert.Equal(t, it, again)
		_, _, _ = LookupProfile(s)
	})
}
