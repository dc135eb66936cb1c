extern "C" int intgemm_sample_width() { return 512; }
