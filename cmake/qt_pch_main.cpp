// Anchor for the Qt Test executables' precompiled headers (NOTE [Qt precompiled headers]).
int main() {
  return 0;
}
