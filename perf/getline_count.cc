// getline_count: counts the lines of a file with the textbook C++ loop,
// std::getline over an std::ifstream, for lines-compare.sh.
//
//   getline_count FILE
#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: getline_count FILE\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "getline_count: cannot open %s\n", argv[1]);
    return 1;
  }
  std::string line;
  unsigned long long n = 0;
  while (std::getline(in, line)) ++n;
  if (in.bad()) {
    std::fprintf(stderr, "getline_count: read error on %s\n", argv[1]);
    return 1;
  }
  std::printf("%llu\n", n);
  return 0;
}
