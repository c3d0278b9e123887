pub const KEYS: &[()] = &[];
