"""The command line: `tf-onthefly COMMAND [FLAGS...]` (the wheel's console script), the same as
`python -m tf_onthefly COMMAND` and `python -m tf_onthefly.COMMAND`.

    tf-onthefly info                       the versions, the op library, XLA and GPU kernels
    tf-onthefly bench [--device=gpu ...]   every input path side by side
    tf-onthefly profile MODULE:FUNCTION    is input your bottleneck? (bench --profile)

Each command's flags: tf-onthefly COMMAND --help.
"""

import sys

COMMANDS = {
    "info": "the versions, the op library for this TensorFlow, XLA kernels, GPU kernels",
    "bench": "the input benchmark: every input path side by side (--device=gpu for the GPU's)",
    "profile": "MODULE:FUNCTION returning (dataset, train_step): is input your bottleneck?",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    rows = "\n".join(f"  {name:<{width}}  {what}" for name, what in COMMANDS.items())
    return (
        f"usage: tf-onthefly COMMAND [FLAGS...]\n\ncommands:\n{rows}\n\nflags of a command: tf-onthefly COMMAND --help"
    )


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"tf-onthefly: unknown command {command!r}\n\n{usage()}", file=sys.stderr)
        return 2
    if command == "info":
        from tf_onthefly import info

        return info.main()
    if command == "profile":
        if not rest or rest[0].startswith("-"):
            print("usage: tf-onthefly profile MODULE:FUNCTION [bench flags...]", file=sys.stderr)
            return 2
        rest = [f"--profile={rest[0]}"] + rest[1:]
    from tf_onthefly import bench  # an absl program: its flags, its --help

    sys.argv = ["tf-onthefly bench"] + rest
    bench.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
