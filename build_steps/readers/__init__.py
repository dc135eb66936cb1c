"""Readers of binaries and state: wheels, ELF and Mach-O files, fatbins, the loader's view, CMake
caches, git. The pipeline's steps (build_steps/*.py) and the gates use them; they change nothing."""
