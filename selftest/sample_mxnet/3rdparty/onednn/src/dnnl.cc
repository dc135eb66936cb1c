extern "C" int dnnl_sample_version() { return 311; }
