package main

import "github.com/bpconvert/bpconvert/convert/formats"

// commands lists every subcommand in help order: the converters, in the
// order of formats.All, after version. Adding a command is one entry here
// and a define function (its flags, returning its run); a converter's
// command is made from its Format alone (converterCommands).
func commands() []command {
	return append(append(append([]command{}, leadCommands()...), converterCommands()...), tailCommands()...)
}

// converterCommands makes the command of each converter of formats.All:
// its name, operands, summary, help text and examples are its Format's,
// its flags those every converter takes and the Format's own (cmdConvert).
func converterCommands() []command {
	out := make([]command, 0, len(formats.All))
	for _, f := range formats.All {
		c := command{name: f.Command, args: f.Args, nargs: 2, summary: f.Summary, long: f.Long, examples: f.Examples, define: cmdConvert(f)}
		if f.OpenMany != nil {
			c.nargs = -1 // SRC... DST, counted by cmdConvert
		}
		out = append(out, c)
	}
	return out
}

// leadCommands are the commands help lists before the converters.
func leadCommands() []command {
	return []command{
		{name: "pack", args: "SRC DST", nargs: 2, define: cmdPack,
			summary: "pack every file under SRC into a new pack directory DST",
			long:    "SRC is a directory, a tar or s3://BUCKET/PREFIX; DST a new directory or s3://BUCKET/PREFIX.\nKeys are the files' paths under SRC.",
			examples: []string{
				"bpconvert pack photos/ media/",
				"bpconvert pack --max-pack-bytes 512MiB photos/ s3://bucket/ds/media",
			}},
		{name: "verify", args: "DATASET", nargs: 1, define: cmdVerify,
			summary: "check packs, CRCs, manifests and every table reference; --against SRC compares payloads",
			long:    "DATASET is a converted dataset's root, a pack directory or one shard, local or s3://BUCKET/PREFIX.\nEach problem prints one FAIL line; any problem exits 1.",
			examples: []string{
				"bpconvert verify ds/",
				"bpconvert verify ds/ --against shards/",
			}},
		{name: "ls", args: "DIR|SHARD", nargs: 1, define: cmdLs,
			summary: "list members: size, shard, key",
			examples: []string{
				"bpconvert ls ds/media | head -3",
				"bpconvert ls --json s3://bucket/ds/media",
			}},
		{name: "cat", args: "REF|KEY [DIR]", nargs: -1, define: cmdCat,
			summary: "write one blob to stdout (CRC-checked; --offset/--length for a part)",
			examples: []string{
				"bpconvert cat 'zip://000001.png::media/pack-0000.zip' ds/ > one.png",
				"bpconvert cat 000001.png ds/media --offset 0 --length 8 | od -c",
			}},
		{name: "unpack", args: "DIR DST", nargs: 2, define: cmdUnpack,
			summary:  "extract every member into a new directory DST",
			examples: []string{"bpconvert unpack ds/media restored/"}},
		{name: "manifest", args: "DIR", nargs: 1, define: cmdManifest,
			summary:  "write pack.manifest.json for a pack written without one",
			examples: []string{"bpconvert manifest ds/media"}},
		{name: "version", nargs: 0, define: cmdVersion,
			summary:  "print the version",
			examples: []string{"bpconvert version", "bpconvert --version"}},
	}
}

// tailCommands are the commands help lists after the converters.
func tailCommands() []command {
	return []command{
		{name: "lance-inspect", args: "DATASET", nargs: 1, define: cmdLanceInspect,
			summary: "describe a Lance dataset: versions, schema, fragments, column encodings, first rows",
			long: "Binary values print as {size, sha256}; blob columns as handles {size, kind, ref_id, location}.\n" +
				"DATASET is a directory or s3://BUCKET/PREFIX; of object storage only the metadata is fetched\n" +
				"(with --rows, the pages of those rows too), and the output says how much (bytes_fetched, fetch_requests).\n" +
				"Exit 3 when DATASET is not a readable Lance dataset; exit 2 for an unknown --dataset-version or column.",
			examples: []string{
				"bpconvert lance-inspect images.lance",
				"bpconvert lance-inspect images.lance --rows 3 --columns id,image",
			}},
		{name: "finalize", args: "DST", nargs: 1, define: cmdFinalize,
			summary: "join the parts of a conversion split with --part I/N into DST (renames, no payload copied)",
			examples: []string{
				"bpconvert finalize ds/",
				"bpconvert finalize s3://bucket/ds",
			}},
		{name: "rebase", args: "DST", nargs: 1, define: cmdRebase,
			summary: "rewrite what the tables' references call the dataset root (--ref-base), after a move or before an upload; packs untouched",
			examples: []string{
				"bpconvert rebase ds/ --ref-base \"$PWD/ds\" --dry-run",
				"bpconvert rebase ds/ --ref-base s3://bucket/ds",
				"bpconvert rebase ds/ --ref-base .",
			}},
	}
}
