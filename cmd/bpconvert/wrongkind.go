package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bpconvert/bpconvert/detect"
)

// operands are a converter's sources and destination as they were named,
// kept so that a refused input can be explained (see explainInput).
type operands struct {
	command string
	srcs    []string
	dst     string
}

// setOperands records a converter's sources and destination.
func (e *env) setOperands(command string, srcs []string, dst string) {
	e.operands = &operands{command: command, srcs: srcs, dst: dst}
}

// kindHint is a hint about the kind of input a converter was given; it
// takes the place of any other hint of the error it wraps.
type kindHint struct {
	err  error
	hint string
}

func (k *kindHint) Error() string { return k.err.Error() }
func (k *kindHint) Unwrap() error { return k.err }

// explainInput looks at the local sources and destination of a converter
// whose input was refused (exit 2 or 3): a source that does not exist is
// named as such (the destination may have been checked first), sources and
// destination given the wrong way round are pointed out, and a source of
// another kind names the command that converts it.
func (e *env) explainInput(err error) error {
	op := e.operands
	if op == nil {
		return err
	}
	dstKind := detect.Unknown
	if local(op.dst) {
		dstKind = detect.Path(op.dst)
	}
	for _, src := range op.srcs {
		if !local(src) {
			continue
		}
		switch k := detect.Path(src); {
		case k == detect.Missing:
			hint := "check the path; the source comes first: bpconvert " + op.command + " SRC DST"
			if dstKind.Command() != "" {
				hint = fmt.Sprintf("%s holds %s: did you swap SRC and DST? (bpconvert %s SRC DST)", op.dst, dstKind, op.command)
			}
			return &kindHint{err: &inputError{err: fmt.Errorf("%s: source %s: no such file or directory", op.command, src)}, hint: hint}
		case k == detect.Output && dstKind.Command() != "":
			return &kindHint{err: err, hint: fmt.Sprintf("%s is a dataset bpconvert wrote and %s holds %s: did you swap SRC and DST? (bpconvert %s SRC DST)", src, op.dst, dstKind, op.command)}
		case k == detect.Output:
			return &kindHint{err: err, hint: src + " is a dataset bpconvert wrote: read it with bpconvert verify, ls or cat, or convert the dataset it was made from"}
		case k.Command() != "" && k.Command() != op.command:
			return &kindHint{err: err, hint: fmt.Sprintf("%s looks like %s: use bpconvert %s", src, k, k.Command())}
		}
	}
	return err
}

// local reports whether a named operand is a plain local path (not object
// storage, standard input or a pattern of
// several sources).
func local(p string) bool {
	if p == "" || p == "-" || strings.ContainsAny(p, "{}*?[") || strings.Contains(p, "::") {
		return false
	}
	return !inBucket(p)
}

// kindHintOf returns the hint of a kindHint in err's chain.
func kindHintOf(err error) (string, bool) {
	var kh *kindHint
	if errors.As(err, &kh) {
		return kh.hint, true
	}
	return "", false
}
