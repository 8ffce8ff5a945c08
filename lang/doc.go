// Package lang is nsc's model language: a participle grammar, a loader
// that follows includes, and the resolution of names into one
// packet.Schema and a set of dataflow graphs (LPGs and PRGs).
//
// In: model files (.nsc). Includes are looked up beside the including
// file, then in Loader.Library (the shipped models); each file is read
// once. Out: a Model whose graphs are validated. Refused: anything
// malformed, with every error found reported as `file:line:col: message`
// in source order (ErrorList); the loader keeps going after an error to
// report more than one.
//
// Names in clusters are prefixed Unicorn-style (node Queue in cluster Rx
// is RxQueue); a reference resolves in the innermost cluster first and by
// its bare name last. The reference is docs/language.md.
package lang
