package plan_test

import (
	"os"

	"github.com/bpconvert/bpconvert/plan"
)

func ExampleRenderText() {
	var ev plan.Evidence
	for _, i := range plan.SampleIndices(4, 1000) {
		ev.Add(2000+i, "JPEG") // size and sniffed kind of row i
	}
	ev.Values = 1000
	p := plan.Plan{
		Source: plan.Source{Format: "Parquet", Path: "/data/train.parquet",
			Counts: plan.Counts{{Name: "rows", N: 1000}}, Bytes: 2_100_000},
		Dest: "/data/out",
		Entries: []plan.Entry{{Name: "image", Kind: "binary column", Evidence: &ev,
			Action: plan.ActionExtract, Fidelity: plan.FidelitySchemaChanges}},
		Layout: []plan.Output{{Path: "media/pack-NNNN.zip", Description: "blob packs"}},
	}
	if err := plan.RenderText(os.Stdout, p); err != nil {
		panic(err)
	}
	// Output:
	// Parquet at /data/train.parquet - 1,000 rows, 2.0 MiB
	//
	//   field  kind           action   evidence                                                       fidelity
	//   image  binary column  extract  1,000 values, 4 sampled, JPEG, 2.4 KiB mean (2.0 KiB-2.9 KiB)  bytes lossless, SCHEMA CHANGES
	//
	// Output in /data/out
	//   media/pack-NNNN.zip  blob packs
}

func ExampleRenderJSON() {
	p := plan.Plan{Source: plan.Source{Format: "Lance", Path: "/data/x.lance",
		Counts: plan.Counts{{Name: "rows", N: 0}}}}
	if err := plan.RenderJSON(os.Stdout, p); err != nil {
		panic(err)
	}
	// Output:
	// {"schema":"bpconvert.plan/v1","source":{"format":"Lance","version":"","path":"/data/x.lance","counts":{"rows":0},"details":[],"bytes":0},"dest":"","entries":[],"layout":[],"notes":[],"explanations":[],"warnings":[]}
}
