package indextable

// Tuple is an ordered list of key components.
type Tuple []any
