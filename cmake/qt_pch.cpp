// Anchor for the Qt libraries' precompiled headers (NOTE [Qt precompiled headers]).
