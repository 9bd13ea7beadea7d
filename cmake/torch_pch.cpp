// Anchor for the shared LibTorch precompiled header (see fs_use_torch).
