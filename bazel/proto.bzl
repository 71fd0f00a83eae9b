"""Compiles .proto files with the system protoc and grpc_cpp_plugin."""

def jobwheel_proto_library(name, srcs, deps = [], grpc = True, proto_root = "proto"):
    """Generates C++ (and gRPC) code for srcs and wraps it in a cc_library.

    Args:
      name: cc_library name.
      srcs: .proto files, paths relative to this package.
      deps: other jobwheel_proto_library targets whose protos are imported.
      grpc: whether to run grpc_cpp_plugin too.
      proto_root: the import root, relative to the workspace.
    """
    pkg = native.package_name()
    rel = pkg[len(proto_root) + 1:] if pkg != proto_root else ""
    outs_h = []
    outs_cc = []
    for src in srcs:
        stem = src[:-len(".proto")]
        outs_h.append(stem + ".pb.h")
        outs_cc.append(stem + ".pb.cc")
        if grpc:
            outs_h.append(stem + ".grpc.pb.h")
            outs_cc.append(stem + ".grpc.pb.cc")
    dep_protos = [d + "_protos" for d in deps]
    native.filegroup(
        name = name + "_protos",
        srcs = srcs + dep_protos,
        visibility = ["//visibility:public"],
    )
    gen_root = "$(GENDIR)/" + proto_root
    files = " ".join([(rel + "/" if rel else "") + s for s in srcs])
    cmd = "/usr/bin/protoc -I" + proto_root + " -I/usr/include --cpp_out=" + gen_root
    if grpc:
        cmd += " --grpc_out=" + gen_root + " --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin"
    cmd += " " + files
    native.genrule(
        name = name + "_gen",
        srcs = srcs + dep_protos,
        outs = outs_h + outs_cc,
        cmd = cmd,
    )
    native.cc_library(
        name = name,
        srcs = outs_cc,
        hdrs = outs_h,
        includes = ["."] if not rel else ["/".join([".."] * len(rel.split("/")))],
        deps = deps + ["@system//:grpc", "@system//:protobuf"],
        visibility = ["//visibility:public"],
    )
