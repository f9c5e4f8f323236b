package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"kraftlog/checker/history"
	"kraftlog/checker/linear"
)

// canonical returns a JSON value in one spelling (compact, object keys
// sorted, numbers as written) so that equal values compare equal as
// strings. An absent value is null.
func canonical(raw json.RawMessage) (string, error) {
	if raw == nil {
		return "null", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	out, err := json.Marshal(v)
	return string(out), err
}

func decodeString(raw json.RawMessage, what string) (string, error) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%s must be a string, got %s", what, shown(raw))
	}
	return s, nil
}

func decodeInt(raw json.RawMessage, what string) (int64, error) {
	var n int64
	if raw == nil || json.Unmarshal(raw, &n) != nil {
		return 0, fmt.Errorf("%s must be an integer, got %s", what, shown(raw))
	}
	return n, nil
}

func shown(raw json.RawMessage) string {
	if raw == nil {
		return "nothing"
	}
	return string(raw)
}

// stringKey reads an operation's key, which names one object of the model.
func stringKey(op history.Op) (string, error) {
	return decodeString(op.Key, `"key"`)
}

func badF(f string, allowed ...string) error {
	return fmt.Errorf("f %q is not one of %s", f, strings.Join(allowed, ", "))
}

// hashString is FNV-1a, written out so that hashing a state allocates
// nothing: the search hashes every state it reaches.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// returned describes an output for DescribeOperation: "?" when unknown.
// Output types that print badly with %v have a String method.
func returned(output any) string {
	if output == linear.OutputUnknown {
		return "?"
	}
	return fmt.Sprint(output)
}
