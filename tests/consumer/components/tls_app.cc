// A TLS user's program (find_package(sluice COMPONENTS tls), sluice::tls):
// it links libsluice-tls and prints the name of its error category.
#include <cstdio>

#include <sluice/tls/tls_error.h>

int main() { std::printf("%s\n", sluice::tls::tls_category().name()); }
