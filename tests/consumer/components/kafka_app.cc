// A Kafka user's program (find_package(sluice COMPONENTS kafka),
// sluice::kafka): it links libsluice-kafka and prints the name of its error
// category.
#include <cstdio>

#include <sluice/kafka/kafka_error.h>

int main() { std::printf("%s\n", sluice::kafka_category().name()); }
