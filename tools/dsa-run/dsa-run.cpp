int main() { return 1; } // TODO(dsa-run)
