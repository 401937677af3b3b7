// libbackplane.so has no sources of its own: it links the whole static library (cmake/package.cmake).
