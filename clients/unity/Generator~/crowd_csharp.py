#!/usr/bin/python3
"""crowd_csharp.py: the C# codec of a proto3 file, generated from protoc's descriptor set.

The Unity package needs no NuGet (no Google.Protobuf), so its messages are plain
C# classes whose WriteTo/MergeFrom call the small hand-written wire runtime in
Runtime/Protocol/ProtoWire.cs. This script writes those classes:

    protoc --include_source_info --descriptor_set_out=crowd.desc -Iproto proto/crowd.proto
    /usr/bin/python3 crowd_csharp.py crowd.desc Runtime/Protocol/Messages.g.cs
    /usr/bin/python3 crowd_csharp.py crowd.desc --check Runtime/Protocol/Messages.g.cs

--check exits 1 (with a diff) when the file differs from what would be written.
Names follow Google.Protobuf's C# mapping (snake_case -> PascalCase via json_name,
the enum values' common prefix dropped); tests/unity/harness/SchemaCheck.cs holds
the generated code to that, independently of this script. Needs Debian's
python3-protobuf (descriptor_pb2). The folder ends in ~ so Unity does not import it.
"""
import difflib
import sys

from google.protobuf import descriptor_pb2

FD = descriptor_pb2.FieldDescriptorProto

# proto type -> (C# type, wire type, read: C# expression over a reader `{r}`,
#               write: statement writing `{v}` to writer `{w}` with no tag, non-default test on `{v}`)
SCALARS = {
    FD.TYPE_DOUBLE: ("double", "Fixed64", "ProtoReader.BitsToDouble({r}.ReadFixed64())",
                     "{w}.WriteFixed64(ProtoWriter.DoubleToBits({v}));", "ProtoWriter.DoubleToBits({v}) != 0"),
    FD.TYPE_FLOAT: ("float", "Fixed32", "ProtoReader.BitsToFloat({r}.ReadFixed32())",
                    "{w}.WriteFixed32(ProtoWriter.FloatToBits({v}));", "ProtoWriter.FloatToBits({v}) != 0"),
    FD.TYPE_INT64: ("long", "Varint", "(long){r}.ReadVarint()", "{w}.WriteVarint((ulong){v});", "{v} != 0"),
    FD.TYPE_UINT64: ("ulong", "Varint", "{r}.ReadVarint()", "{w}.WriteVarint({v});", "{v} != 0"),
    FD.TYPE_INT32: ("int", "Varint", "ProtoReader.CheckInt32({r}.ReadVarint())",
                    "{w}.WriteVarint((ulong)(long){v});", "{v} != 0"),
    FD.TYPE_FIXED64: ("ulong", "Fixed64", "{r}.ReadFixed64()", "{w}.WriteFixed64({v});", "{v} != 0"),
    FD.TYPE_FIXED32: ("uint", "Fixed32", "{r}.ReadFixed32()", "{w}.WriteFixed32({v});", "{v} != 0"),
    FD.TYPE_BOOL: ("bool", "Varint", "{r}.ReadVarint() != 0", "{w}.WriteVarint({v} ? 1UL : 0UL);", "{v}"),
    FD.TYPE_UINT32: ("uint", "Varint", "ProtoReader.CheckUInt32({r}.ReadVarint())", "{w}.WriteVarint({v});", "{v} != 0"),
    FD.TYPE_SFIXED32: ("int", "Fixed32", "(int){r}.ReadFixed32()", "{w}.WriteFixed32((uint){v});", "{v} != 0"),
    FD.TYPE_SFIXED64: ("long", "Fixed64", "(long){r}.ReadFixed64()", "{w}.WriteFixed64((ulong){v});", "{v} != 0"),
    FD.TYPE_SINT32: ("int", "Varint", "ProtoReader.DecodeSInt32({r}.ReadVarint())",
                     "{w}.WriteVarint(ProtoWriter.EncodeSInt32({v}));", "{v} != 0"),
    FD.TYPE_SINT64: ("long", "Varint", "ProtoReader.DecodeSInt64({r}.ReadVarint())",
                     "{w}.WriteVarint(ProtoWriter.EncodeSInt64({v}));", "{v} != 0"),
}


class GenError(Exception):
    pass


def pascal_from_snake(snake):
    return "".join(p[:1].upper() + p[1:] for p in snake.lower().split("_") if p)


def field_name(f, message=None):
    """PascalCase from json_name; a member named like its class gets a trailing _ (as in Google.Protobuf)."""
    j = f.json_name or f.name
    n = j[:1].upper() + j[1:]
    return n + "_" if message is not None and n == message.name else n


def short_type(type_name):
    return type_name.rsplit(".", 1)[-1]


def enum_value_names(e):
    """Google.Protobuf-style: the values' common UPPER_SNAKE prefix (up to its last '_') dropped."""
    prefix = e.value[0].name
    for v in e.value:
        while not v.name.startswith(prefix):
            prefix = prefix[:-1]
    cut = prefix.rfind("_") + 1
    names = [pascal_from_snake(v.name[cut:]) for v in e.value]
    for n, v in zip(names, e.value):
        if not n or not (n[0].isalpha() or n[0] == "_"):
            raise GenError("enum %s: value %s has no C# name after its prefix" % (e.name, v.name))
    return names


class Comments:
    """The .proto's comments by descriptor path, for doc comments.

    crowd.proto documents a field or enum value either with a block of // lines
    above it (leading) or at the end of its line (trailing), and a long trailing
    comment goes on in // lines under it. protoc reports those continuation lines
    as the *next* element's leading comment; they are told apart by the next
    element having its own trailing comment too, and moved back where they belong.
    """

    def __init__(self, file):
        leading, trailing = {}, {}
        for loc in file.source_code_info.location:
            path = tuple(loc.path)
            if loc.leading_comments.strip():
                leading[path] = loc.leading_comments.strip()
            if loc.trailing_comments.strip():
                trailing[path] = loc.trailing_comments.strip()

        def sibling(path, step):
            return path[:-1] + (path[-1] + step,) if path else path

        def continues(path):
            """The leading comment of `path` continues the trailing comment of the element before it."""
            return path in leading and path in trailing and path[-1] > 0 and sibling(path, -1) in trailing

        self.by_path = {}
        for path in set(leading) | set(trailing):
            parts = []
            if path in leading and not continues(path):
                parts.append(leading[path])
            if path in trailing:
                parts.append(trailing[path])
                if continues(sibling(path, 1)):
                    parts.append(leading[sibling(path, 1)])
            if parts:
                self.by_path[path] = "\n".join(parts)

    def doc(self, path, indent):
        text = self.by_path.get(tuple(path))
        if not text:
            return []
        lines = [l.strip() for l in text.splitlines()]
        esc = [l.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for l in lines]
        if len(esc) == 1:
            return [indent + "/// <summary>" + esc[0] + "</summary>"]
        return [indent + "/// <summary>"] + [(indent + "/// " + l).rstrip() for l in esc] + [indent + "/// </summary>"]


class Generator:
    def __init__(self, file):
        self.file = file
        self.comments = Comments(file)
        self.enums = {e.name for e in file.enum_type}
        self.messages = {m.name for m in file.message_type}
        self.out = []
        self.current = None  # the message being written

    def emit(self, line=""):
        self.out.append(line)

    def run(self):
        f = self.file
        if f.syntax != "proto3":
            raise GenError("%s: only proto3 is supported" % f.name)
        if f.dependency:
            raise GenError("%s: imports are not supported (%s)" % (f.name, ", ".join(f.dependency)))
        ns = ".".join(pascal_from_snake(p) for p in f.package.split("."))
        self.emit("// <auto-generated>")
        self.emit("// Generated from %s by clients/unity/Generator~/crowd_csharp.py. Do not edit:" % f.name)
        self.emit("// change the .proto, then `cmake --build build --target unity_codec_update`.")
        self.emit("// </auto-generated>")
        self.emit("using System.Collections.Generic;")
        self.emit("")
        self.emit("namespace " + ns)
        self.emit("{")
        for i, e in enumerate(f.enum_type):
            self.enum(i, e)
        for i, m in enumerate(f.message_type):
            self.message(i, m)
        if self.out[-1] == "":
            self.out.pop()
        self.emit("}")
        return "\n".join(self.out) + "\n"

    def enum(self, i, e):
        self.out += self.comments.doc([5, i], "    ")
        self.emit("    public enum " + e.name)
        self.emit("    {")
        for j, (v, n) in enumerate(zip(e.value, enum_value_names(e))):
            self.out += self.comments.doc([5, i, 2, j], "        ")
            self.emit("        %s = %d," % (n, v.number))
        self.emit("    }")
        self.emit("")

    # ---------------------------------------------------------------- messages

    def cs_type(self, f):
        if f.type == FD.TYPE_MESSAGE or f.type == FD.TYPE_ENUM:
            name = short_type(f.type_name)
            if name not in (self.messages if f.type == FD.TYPE_MESSAGE else self.enums):
                raise GenError("field %s: type %s is not a top-level type of this file" % (f.name, f.type_name))
            return name
        if f.type == FD.TYPE_STRING:
            return "string"
        if f.type == FD.TYPE_BYTES:
            return "byte[]"
        if f.type in SCALARS:
            return SCALARS[f.type][0]
        raise GenError("field %s: type %d is not supported (groups?)" % (f.name, f.type))

    def scalar(self, f):
        """(C# type, wire type, read template, write template, non-default template) for scalars and enums."""
        if f.type == FD.TYPE_ENUM:
            t = self.cs_type(f)
            return (t, "Varint", "(" + t + ")ProtoReader.CheckInt32({r}.ReadVarint())",
                    "{w}.WriteVarint((ulong)(long)(int){v});", "(int){v} != 0")
        return SCALARS.get(f.type)

    def name(self, f):
        return field_name(f, self.current)

    def message(self, i, m):
        self.current = m
        if m.nested_type or m.enum_type:
            raise GenError("message %s: nested types are not supported" % m.name)
        if m.extension_range or m.extension:
            raise GenError("message %s: extensions are not supported" % m.name)
        oneofs = {}  # index -> [fields], real oneofs only (proto3 `optional` makes synthetic ones)
        for f in m.field:
            if f.HasField("oneof_index") and not f.proto3_optional:
                if f.type != FD.TYPE_MESSAGE:
                    raise GenError("message %s: oneof member %s is not a message (only messages are supported)" % (m.name, f.name))
                oneofs.setdefault(f.oneof_index, []).append(f)

        self.out += self.comments.doc([4, i], "    ")
        self.emit("    public sealed partial class %s : IProtoMessage" % m.name)
        self.emit("    {")
        for f in m.field:
            self.emit("        public const int %sFieldNumber = %d;" % (self.name(f), f.number))
        for j, f in enumerate(m.field):
            if f.HasField("oneof_index") and not f.proto3_optional:
                continue
            self.out += self.comments.doc([4, i, 2, j], "        ")
            self.emit("        public " + self.member_decl(f))
        for k, members in sorted(oneofs.items()):
            self.oneof(m, i, k, members)
        self.emit("")
        self.write_to(m, oneofs)
        self.emit("")
        self.merge_from(m)
        self.emit("    }")
        self.emit("")

    def member_decl(self, f):
        t = self.cs_type(f)
        n = self.name(f)
        if f.label == FD.LABEL_REPEATED:
            return "List<%s> %s = new List<%s>();" % (t, n, t)
        if f.type == FD.TYPE_MESSAGE:
            return "%s %s;" % (t, n)
        if f.proto3_optional:
            if f.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
                return "%s %s;" % (t, n)  # null: absent
            return "%s? %s;" % (t, n)
        if f.type == FD.TYPE_STRING:
            return 'string %s = "";' % n
        if f.type == FD.TYPE_BYTES:
            return "byte[] %s = new byte[0];" % n
        return "%s %s;" % (t, n)

    def oneof(self, m, i, k, members):
        o = pascal_from_snake(m.oneof_decl[k].name)
        case = o + "OneofCase"
        self.emit("")
        self.emit("        /// <summary>Which member of the `%s` oneof is set (its value is the field number).</summary>" % m.oneof_decl[k].name)
        self.emit("        public enum " + case)
        self.emit("        {")
        self.emit("            None = 0,")
        for f in members:
            self.emit("            %s = %sFieldNumber," % (self.name(f), self.name(f)))
        self.emit("        }")
        self.emit("")
        self.emit("        IProtoMessage %s_;" % o.lower())
        self.emit("        %s %sCase_;" % (case, o.lower()))
        self.emit("")
        self.emit("        public %s %sCase { get { return %sCase_; } }" % (case, o, o.lower()))
        self.emit("")
        self.emit("        public void Clear%s() { %s_ = null; %sCase_ = %s.None; }" % (o, o.lower(), o.lower(), case))
        for f in members:
            n = self.name(f)
            t = self.cs_type(f)
            j = list(m.field).index(f)
            self.emit("")
            self.out += self.comments.doc([4, i, 2, j], "        ")
            self.emit("        public %s %s" % (t, n))
            self.emit("        {")
            self.emit("            get { return %sCase_ == %s.%s ? (%s)%s_ : null; }" % (o.lower(), case, n, t, o.lower()))
            self.emit("            set { %s_ = value; %sCase_ = value == null ? %s.None : %s.%s; }" % (o.lower(), o.lower(), case, case, n))
            self.emit("        }")

    def write_to(self, m, oneofs):
        self.emit("        public void WriteTo(ProtoWriter w)")
        self.emit("        {")
        for f in sorted(m.field, key=lambda f: f.number):
            for line in self.write_field(m, f):
                self.emit("            " + line)
        self.emit("        }")

    def write_field(self, m, f):
        n = self.name(f)
        num = n + "FieldNumber"
        if f.HasField("oneof_index") and not f.proto3_optional:
            o = pascal_from_snake(m.oneof_decl[f.oneof_index].name)
            return ["if (%sCase_ == %sOneofCase.%s) w.WriteMessage(%s, %s_);" % (o.lower(), o, n, num, o.lower())]
        repeated = f.label == FD.LABEL_REPEATED
        if f.type == FD.TYPE_MESSAGE:
            if repeated:
                return ["foreach (var e in %s) w.WriteMessage(%s, e ?? new %s());" % (n, num, self.cs_type(f))]
            return ["w.WriteMessage(%s, %s);" % (num, n)]
        if f.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
            call = "WriteString" if f.type == FD.TYPE_STRING else "WriteBytes"
            if repeated:
                return ["foreach (var e in %s) w.%s(%s, e);" % (n, call, num)]
            if f.proto3_optional:
                return ["if (%s != null) w.%s(%s, %s);" % (n, call, num, n)]
            return ["if (%s != null && %s.Length != 0) w.%s(%s, %s);" % (n, n, call, num, n)]
        t, wt, _, write, nondefault = self.scalar(f)
        if repeated:
            fixed = {"Fixed32": 4, "Fixed64": 8}.get(wt)
            if fixed:
                body = "w.WriteTag(%s, WireType.LengthDelimited); w.WriteVarint((ulong)%s.Count * %d); foreach (var v in %s) %s" % (
                    num, n, fixed, n, write.format(w="w", v="v"))
            else:
                body = "var packed = new ProtoWriter(%s.Count * 2); foreach (var v in %s) %s w.WriteLengthDelimited(%s, packed);" % (
                    n, n, write.format(w="packed", v="v"), num)
            return ["if (%s.Count != 0) { %s }" % (n, body)]
        if f.proto3_optional:
            cond = "%s.HasValue" % n
            v = n + ".Value"
        else:
            cond = nondefault.format(v=n)
            v = n
        return ["if (%s) { w.WriteTag(%s, WireType.%s); %s }" % (cond, num, wt, write.format(w="w", v=v))]

    def merge_from(self, m):
        self.emit("        public void MergeFrom(ProtoReader r)")
        self.emit("        {")
        self.emit("            int f;")
        self.emit("            while (r.NextField(out f))")
        self.emit("            {")
        self.emit("                switch (f)")
        self.emit("                {")
        for f in sorted(m.field, key=lambda f: f.number):
            lines = self.read_field(f)
            head = "                    case %sFieldNumber:" % self.name(f)
            if len(lines) == 1:
                self.emit(head + " " + lines[0] + " break;")
            else:
                self.emit(head)
                for line in lines:
                    self.emit("                        " + line)
                self.emit("                        break;")
        self.emit("                    default: r.SkipUnknown(); break;")
        self.emit("                }")
        self.emit("            }")
        self.emit("        }")

    def read_field(self, f):
        n = self.name(f)
        repeated = f.label == FD.LABEL_REPEATED
        if f.type == FD.TYPE_MESSAGE:
            if repeated:
                return ["%s.Add(r.ReadMessage<%s>());" % (n, self.cs_type(f))]
            return ["%s = r.MergeMessage(%s);" % (n, n)]
        if f.type in (FD.TYPE_STRING, FD.TYPE_BYTES):
            call = "r.ReadString()" if f.type == FD.TYPE_STRING else "r.ReadBytes()"
            return ["%s.Add(%s);" % (n, call)] if repeated else ["%s = %s;" % (n, call)]
        t, wt, read, _, _ = self.scalar(f)
        if repeated:
            # Parsers must accept both packed (proto3's default) and one element per tag.
            return ["for (var e = r.ReadElements(WireType.%s); !e.AtEnd;) %s.Add(%s);" % (wt, n, read.format(r="e"))]
        return ["r.Expect(WireType.%s); %s = %s;" % (wt, n, read.format(r="r"))]


def main(argv):
    args = argv[1:]
    check = "--check" in args
    if check:
        args.remove("--check")
    if len(args) != 2:
        sys.stderr.write(__doc__)
        return 2
    desc_path, out_path = args
    with open(desc_path, "rb") as fh:
        fds = descriptor_pb2.FileDescriptorSet.FromString(fh.read())
    if len(fds.file) != 1:
        sys.stderr.write("%s: expected exactly one file (no --include_imports), found %d\n" % (desc_path, len(fds.file)))
        return 2
    try:
        text = Generator(fds.file[0]).run()
    except GenError as e:
        sys.stderr.write("crowd_csharp.py: %s\n" % e)
        return 1
    if check:
        try:
            with open(out_path, encoding="utf-8", newline="") as fh:
                have = fh.read()
        except FileNotFoundError:
            have = ""
        if have == text:
            print("%s is what crowd_csharp.py generates from %s" % (out_path, fds.file[0].name))
            return 0
        sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), text.splitlines(True),
                                                   out_path + " (committed)", out_path + " (generated)"))
        print("\n%s differs from what the generator writes for %s.\n"
              "Regenerate and commit it: cmake --build build --target unity_codec_update" % (out_path, fds.file[0].name))
        return 1
    with open(out_path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
