// SchemaCheck.cs — fails when proto/crowd.proto changes and the C# codec does
// not follow. It reads the FileDescriptorSet protoc wrote at build time (with the
// package's own ProtoReader: a descriptor is just protobuf) and checks, for every
// message, enum and oneof: names, field numbers, C# member types, and by
// encoding a message with every field set from the descriptor alone, that the C#
// codec reads each field (no unknowns), with the right values, and writes the
// same bytes back.
using System;
using System.Collections;
using System.Collections.Generic;
using System.IO;
using System.Reflection;
using Crowd.V1;

namespace Crowd.Harness
{
    // ------------------------------------------------------------ descriptor.proto, the parts used
    sealed class FieldDesc : IProtoMessage
    {
        public string Name = "", TypeName = "", JsonName = "";
        public int Number, Label, Type;
        public int OneofIndex = -1;
        public bool Proto3Optional;
        public void WriteTo(ProtoWriter w) { throw new NotSupportedException(); }
        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case 1: Name = r.ReadString(); break;
                    case 3: Number = (int)r.ReadUInt32(); break;
                    case 4: Label = r.ReadEnum(); break;
                    case 5: Type = r.ReadEnum(); break;
                    case 6: TypeName = r.ReadString(); break;
                    case 9: OneofIndex = (int)r.ReadUInt32(); break;
                    case 10: JsonName = r.ReadString(); break;
                    case 17: Proto3Optional = r.ReadBool(); break;
                    default: r.Skip(); break;
                }
            }
        }
        public bool Repeated { get { return Label == 3; } }
    }

    sealed class NamedDesc : IProtoMessage
    {
        public string Name = "";
        public int Number;
        public void WriteTo(ProtoWriter w) { throw new NotSupportedException(); }
        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                if (f == 1) Name = r.ReadString();
                else if (f == 2 && r.FieldWireType == WireType.Varint) Number = r.ReadEnum();
                else r.Skip();
            }
        }
    }

    sealed class EnumDesc : IProtoMessage
    {
        public string Name = "";
        public List<NamedDesc> Values = new List<NamedDesc>();
        public void WriteTo(ProtoWriter w) { throw new NotSupportedException(); }
        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                if (f == 1) Name = r.ReadString();
                else if (f == 2) Values.Add(r.ReadMessage<NamedDesc>());
                else r.Skip();
            }
        }
    }

    sealed class MessageDesc : IProtoMessage
    {
        public string Name = "";
        public List<FieldDesc> Fields = new List<FieldDesc>();
        public List<MessageDesc> Nested = new List<MessageDesc>();
        public List<EnumDesc> Enums = new List<EnumDesc>();
        public List<NamedDesc> Oneofs = new List<NamedDesc>();
        public void WriteTo(ProtoWriter w) { throw new NotSupportedException(); }
        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case 1: Name = r.ReadString(); break;
                    case 2: Fields.Add(r.ReadMessage<FieldDesc>()); break;
                    case 3: Nested.Add(r.ReadMessage<MessageDesc>()); break;
                    case 4: Enums.Add(r.ReadMessage<EnumDesc>()); break;
                    case 8: Oneofs.Add(r.ReadMessage<NamedDesc>()); break;
                    default: r.Skip(); break;
                }
            }
        }
    }

    sealed class FileDesc : IProtoMessage
    {
        public string Name = "", Package = "";
        public List<MessageDesc> Messages = new List<MessageDesc>();
        public List<EnumDesc> Enums = new List<EnumDesc>();
        public void WriteTo(ProtoWriter w) { throw new NotSupportedException(); }
        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case 1: Name = r.ReadString(); break;
                    case 2: Package = r.ReadString(); break;
                    case 4: Messages.Add(r.ReadMessage<MessageDesc>()); break;
                    case 5: Enums.Add(r.ReadMessage<EnumDesc>()); break;
                    default: r.Skip(); break;
                }
            }
        }
    }

    sealed class FileSet : IProtoMessage
    {
        public List<FileDesc> Files = new List<FileDesc>();
        public void WriteTo(ProtoWriter w) { throw new NotSupportedException(); }
        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                if (f == 1) Files.Add(r.ReadMessage<FileDesc>());
                else r.Skip();
            }
        }
    }

    public static class SchemaCheck
    {
        // FieldDescriptorProto.Type
        const int TDouble = 1, TFloat = 2, TInt64 = 3, TUInt64 = 4, TInt32 = 5, TFixed64 = 6, TFixed32 = 7, TBool = 8, TString = 9,
                  TMessage = 11, TBytes = 12, TUInt32 = 13, TEnum = 14, TSFixed32 = 15, TSFixed64 = 16, TSInt32 = 17, TSInt64 = 18;
        static MessageDesc current; // the message whose fields are being named

        static Dictionary<string, MessageDesc> messages = new Dictionary<string, MessageDesc>();
        static Dictionary<string, EnumDesc> enums = new Dictionary<string, EnumDesc>();
        static Assembly codec = typeof(ProtoMessage).Assembly;

        public static void Run(string descriptorPath)
        {
            byte[] bytes = File.ReadAllBytes(descriptorPath);
            var set = ProtoMessage.Parse<FileSet>(bytes);
            FileDesc file = null;
            foreach (var f in set.Files)
                if (f.Package == "crowd.v1") file = f;
            Check.That(file != null, "descriptor set holds package crowd.v1");
            if (file == null) return;
            foreach (var m in file.Messages)
            {
                messages[m.Name] = m;
                Check.That(m.Nested.Count == 0 && m.Enums.Count == 0, m.Name + ": no nested types (the codec has none)");
            }
            foreach (var e in file.Enums) enums[e.Name] = e;

            CheckEveryCodecTypeIsInTheSchema();
            foreach (var e in file.Enums) CheckEnum(e);
            foreach (var m in file.Messages) { current = m; CheckMessageShape(m); }
            foreach (var m in file.Messages) { current = m; CheckMessageOnTheWire(m); }
        }

        // Google.Protobuf's C# names: json_name with its first letter raised; a member named like
        // its class gets a trailing _ (C# forbids the clash).
        static string Pascal(FieldDesc f)
        {
            string j = f.JsonName.Length > 0 ? f.JsonName : f.Name;
            string n = char.ToUpperInvariant(j[0]) + j.Substring(1);
            return current != null && n == current.Name ? n + "_" : n;
        }

        static string PascalFromSnake(string snake)
        {
            var parts = snake.ToLowerInvariant().Split('_');
            string s = "";
            foreach (var p in parts)
                if (p.Length > 0) s += char.ToUpperInvariant(p[0]) + p.Substring(1);
            return s;
        }

        static Type CodecType(string name) { return codec.GetType("Crowd.V1." + name); }

        static string ShortTypeName(string typeName)
        {
            int dot = typeName.LastIndexOf('.');
            return dot >= 0 ? typeName.Substring(dot + 1) : typeName;
        }

        static void CheckEveryCodecTypeIsInTheSchema()
        {
            foreach (var t in codec.GetTypes())
            {
                if (t.Namespace != "Crowd.V1" || t.IsNested) continue;
                if (typeof(IProtoMessage).IsAssignableFrom(t) && !t.IsInterface)
                    Check.That(messages.ContainsKey(t.Name), "C# message " + t.Name + " exists in crowd.proto");
                if (t.IsEnum && t != typeof(WireType) && t != typeof(FrameResult))
                    Check.That(enums.ContainsKey(t.Name), "C# enum " + t.Name + " exists in crowd.proto");
            }
        }

        static void CheckEnum(EnumDesc e)
        {
            Type t = CodecType(e.Name);
            Check.That(t != null && t.IsEnum, "enum " + e.Name + " has a C# enum");
            if (t == null || !t.IsEnum) return;
            // Google.Protobuf's C# names: drop the common UPPER_SNAKE prefix, then PascalCase.
            string prefix = e.Values[0].Name;
            foreach (var v in e.Values)
                while (!v.Name.StartsWith(prefix, StringComparison.Ordinal)) prefix = prefix.Substring(0, prefix.Length - 1);
            int cut = prefix.LastIndexOf('_') + 1;
            var names = new HashSet<string>();
            foreach (var v in e.Values)
            {
                string cs = PascalFromSnake(v.Name.Substring(cut));
                names.Add(cs);
                bool has = Enum.IsDefined(t, cs);
                Check.That(has && (int)Enum.Parse(t, cs) == v.Number, e.Name + "." + v.Name + " = " + v.Number + " is C# " + t.Name + "." + cs);
            }
            foreach (string n in Enum.GetNames(t))
                Check.That(names.Contains(n), "C# " + t.Name + "." + n + " exists in crowd.proto");
        }

        static Type MemberType(Type t, string name)
        {
            var f = t.GetField(name, BindingFlags.Public | BindingFlags.Instance);
            if (f != null) return f.FieldType;
            var p = t.GetProperty(name, BindingFlags.Public | BindingFlags.Instance);
            return p != null ? p.PropertyType : null;
        }

        static object MemberValue(object o, string name)
        {
            var f = o.GetType().GetField(name, BindingFlags.Public | BindingFlags.Instance);
            if (f != null) return f.GetValue(o);
            return o.GetType().GetProperty(name, BindingFlags.Public | BindingFlags.Instance).GetValue(o, null);
        }

        static Type ScalarType(FieldDesc f)
        {
            switch (f.Type)
            {
                case TDouble: return typeof(double);
                case TFloat: return typeof(float);
                case TInt64: case TSInt64: case TSFixed64: return typeof(long);
                case TUInt64: case TFixed64: return typeof(ulong);
                case TInt32: case TSInt32: case TSFixed32: return typeof(int);
                case TUInt32: case TFixed32: return typeof(uint);
                case TBool: return typeof(bool);
                case TString: return typeof(string);
                case TBytes: return typeof(byte[]);
                case TEnum: return CodecType(ShortTypeName(f.TypeName));
                case TMessage: return CodecType(ShortTypeName(f.TypeName));
                default: return null; // a type crowd.v1 does not use yet: the codec must learn it
            }
        }

        static Type ExpectedMemberType(FieldDesc f)
        {
            Type s = ScalarType(f);
            if (s == null) return null;
            if (f.Repeated) return typeof(List<>).MakeGenericType(s);
            if (f.Proto3Optional && s.IsValueType) return typeof(Nullable<>).MakeGenericType(s);
            return s;
        }

        static void CheckMessageShape(MessageDesc m)
        {
            Type t = CodecType(m.Name);
            Check.That(t != null && typeof(IProtoMessage).IsAssignableFrom(t), "message " + m.Name + " has a C# codec type");
            if (t == null) return;
            var numbers = new HashSet<string>();
            foreach (var f in m.Fields)
            {
                string cs = Pascal(f);
                numbers.Add(cs + "FieldNumber");
                var constant = t.GetField(cs + "FieldNumber", BindingFlags.Public | BindingFlags.Static);
                Check.That(constant != null && (int)constant.GetValue(null) == f.Number,
                           m.Name + "." + f.Name + " is field " + f.Number + " (" + t.Name + "." + cs + "FieldNumber)");
                Type expected = ExpectedMemberType(f);
                Type actual = MemberType(t, cs);
                Check.That(expected != null && expected == actual,
                           m.Name + "." + f.Name + " (type " + f.Type + (f.Repeated ? ", repeated" : "") + (f.Proto3Optional ? ", optional" : "") +
                           ") is C# " + (expected != null ? expected.Name : "<unsupported type>") + " " + cs + (actual != null && actual != expected ? " (found " + actual.Name + ")" : ""));
            }
            foreach (var c in t.GetFields(BindingFlags.Public | BindingFlags.Static))
                if (c.Name.EndsWith("FieldNumber", StringComparison.Ordinal))
                    Check.That(numbers.Contains(c.Name), "C# " + t.Name + "." + c.Name + " exists in crowd.proto");

            // Real oneofs (proto3 `optional` makes synthetic ones, which have no case enum).
            for (int i = 0; i < m.Oneofs.Count; i++)
            {
                var members = m.Fields.FindAll(f => f.OneofIndex == i && !f.Proto3Optional);
                if (members.Count == 0) continue;
                string caseName = PascalFromSnake(m.Oneofs[i].Name) + "OneofCase";
                Type caseEnum = t.GetNestedType(caseName);
                Check.That(caseEnum != null && caseEnum.IsEnum, m.Name + " oneof " + m.Oneofs[i].Name + " has C# " + caseName);
                if (caseEnum == null) continue;
                Check.That(Enum.GetNames(caseEnum).Length == members.Count + 1, m.Name + "." + caseName + " has one member per oneof field, plus None");
                foreach (var f in members)
                {
                    string cs = Pascal(f);
                    Check.That(Enum.IsDefined(caseEnum, cs) && (int)Enum.Parse(caseEnum, cs) == f.Number,
                               m.Name + "." + caseName + "." + cs + " = " + f.Number);
                }
            }
        }

        // ------------------------------------------------------------ descriptor-driven encoder

        // Values chosen so that a codec confusing types notices: uint32 past int32, negative sint32,
        // uint64 past 32 bits, proto3 `optional` fields present at 0.
        static object ScalarValue(FieldDesc f, int k)
        {
            if (f.Proto3Optional)
            {
                switch (f.Type)
                {
                    case TDouble: return 0.0;
                    case TFloat: return 0f;
                    case TInt64: case TSInt64: case TSFixed64: return 0L;
                    case TUInt64: case TFixed64: return 0UL;
                    case TInt32: case TSInt32: case TSFixed32: return 0;
                    case TUInt32: case TFixed32: return 0u;
                    case TBool: return false;
                    case TString: return "";
                }
            }
            switch (f.Type)
            {
                case TDouble: return f.Number + 0.25 + k;
                case TFloat: return f.Number + 0.5f + k;
                case TUInt64: case TFixed64: return (1UL << 40) + (ulong)f.Number + (ulong)k;
                case TInt64: case TSInt64: case TSFixed64: return k == 0 ? -(1L << 40) - f.Number : 7L;
                case TBool: return true;
                case TString: return "s" + f.Number + "é";
                case TBytes: return new byte[] { (byte)f.Number, 0, 255 };
                case TUInt32: case TFixed32: return 3000000000u + (uint)f.Number + (uint)k;
                case TInt32: case TSFixed32: return k == 0 ? -(2000 + f.Number) : 9;
                case TSInt32: return k == 0 ? -(1000 + f.Number) : 7;
                case TEnum:
                    foreach (var v in enums[ShortTypeName(f.TypeName)].Values)
                        if (v.Number != 0) return v.Number;
                    return 0;
            }
            throw new NotSupportedException("field type " + f.Type);
        }

        static void WriteScalar(ProtoWriter w, FieldDesc f, object v)
        {
            switch (f.Type)
            {
                case TDouble: w.WriteFixed64((ulong)BitConverter.DoubleToInt64Bits((double)v)); break;
                case TFloat: w.WriteFixed32(ProtoWriter.FloatToBits((float)v)); break;
                case TUInt64: w.WriteVarint((ulong)v); break;
                case TInt64: w.WriteVarint((ulong)(long)v); break;
                case TSInt64: { long x = (long)v; w.WriteVarint((ulong)((x << 1) ^ (x >> 63))); break; }
                case TFixed64: w.WriteFixed64((ulong)v); break;
                case TSFixed64: w.WriteFixed64((ulong)(long)v); break;
                case TBool: w.WriteVarint((bool)v ? 1UL : 0UL); break;
                case TUInt32: w.WriteVarint((uint)v); break;
                case TInt32: w.WriteVarint((ulong)(long)(int)v); break;
                case TFixed32: w.WriteFixed32((uint)v); break;
                case TSFixed32: w.WriteFixed32((uint)(int)v); break;
                case TSInt32: w.WriteVarint(ProtoWriter.EncodeSInt32((int)v)); break;
                case TEnum: w.WriteVarint((ulong)(long)(int)v); break;
            }
        }

        static WireType WireTypeOf(FieldDesc f)
        {
            switch (f.Type)
            {
                case TFloat: case TFixed32: case TSFixed32: return WireType.Fixed32;
                case TDouble: case TFixed64: case TSFixed64: return WireType.Fixed64;
                case TString: case TBytes: case TMessage: return WireType.LengthDelimited;
                default: return WireType.Varint;
            }
        }

        // Every field set except oneof members other than `oneofChoice` (field number, 0 = none).
        static byte[] Encode(MessageDesc m, int oneofChoice, int depth)
        {
            var w = new ProtoWriter();
            var fields = new List<FieldDesc>(m.Fields);
            fields.Sort((a, b) => a.Number.CompareTo(b.Number));
            foreach (var f in fields)
            {
                if (f.OneofIndex >= 0 && !f.Proto3Optional && f.Number != oneofChoice) continue;
                if (f.Type == TMessage)
                {
                    if (depth > 3) continue;
                    var sub = messages[ShortTypeName(f.TypeName)];
                    int count = f.Repeated ? 2 : 1;
                    for (int k = 0; k < count; k++)
                    {
                        byte[] body = Encode(sub, FirstOneofMember(sub), depth + 1);
                        w.WriteTag(f.Number, WireType.LengthDelimited);
                        w.WriteVarint((ulong)body.Length);
                        w.WriteRawBytes(body, 0, body.Length);
                    }
                }
                else if (f.Type == TString || f.Type == TBytes)
                {
                    for (int k = 0; k < (f.Repeated ? 2 : 1); k++)
                    {
                        object v = ScalarValue(f, k);
                        byte[] s = f.Type == TString ? System.Text.Encoding.UTF8.GetBytes((string)v) : (byte[])v;
                        w.WriteTag(f.Number, WireType.LengthDelimited);
                        w.WriteVarint((ulong)s.Length);
                        w.WriteRawBytes(s, 0, s.Length);
                    }
                }
                else if (f.Repeated)
                {
                    var packed = new ProtoWriter();
                    WriteScalar(packed, f, ScalarValue(f, 0));
                    WriteScalar(packed, f, ScalarValue(f, 1));
                    byte[] body = packed.ToArray();
                    w.WriteTag(f.Number, WireType.LengthDelimited);
                    w.WriteVarint((ulong)body.Length);
                    w.WriteRawBytes(body, 0, body.Length);
                }
                else
                {
                    w.WriteTag(f.Number, WireTypeOf(f));
                    WriteScalar(w, f, ScalarValue(f, 0));
                }
            }
            return w.ToArray();
        }

        static int FirstOneofMember(MessageDesc m)
        {
            foreach (var f in m.Fields)
                if (f.OneofIndex >= 0 && !f.Proto3Optional) return f.Number;
            return 0;
        }

        static void CheckMessageOnTheWire(MessageDesc m)
        {
            Type t = CodecType(m.Name);
            if (t == null) return;
            var choices = new List<int>();
            foreach (var f in m.Fields)
                if (f.OneofIndex >= 0 && !f.Proto3Optional) choices.Add(f.Number);
            if (choices.Count == 0) choices.Add(0);
            foreach (int choice in choices)
            {
                string what = m.Name + (choice != 0 ? " (oneof field " + choice + ")" : "");
                byte[] wire;
                try
                {
                    wire = Encode(m, choice, 0);
                }
                catch (NotSupportedException e)
                {
                    Check.That(false, what + ": every field type is one the codec knows (" + e.Message + ")");
                    continue;
                }
                var msg = (IProtoMessage)Activator.CreateInstance(t);
                var reader = new ProtoReader(wire, 0, wire.Length);
                try
                {
                    msg.MergeFrom(reader);
                }
                catch (ProtoException e)
                {
                    Check.That(false, what + ": the C# codec reads every field (" + e.Message + ")");
                    continue;
                }
                Check.That(reader.UnknownFields == 0, what + ": the C# codec knows every field (" + reader.UnknownFields + " unknown)");
                byte[] back = ProtoMessage.ToByteArray(msg);
                Check.That(Convert.ToBase64String(back) == Convert.ToBase64String(wire),
                           what + ": the C# codec writes the same " + wire.Length + " bytes back (" + back.Length + " written)");
                foreach (var f in m.Fields)
                {
                    if (f.Type == TMessage || (f.OneofIndex >= 0 && !f.Proto3Optional && f.Number != choice)) continue;
                    object actual = MemberValue(msg, Pascal(f));
                    object expected = ScalarValue(f, 0);
                    if (f.Repeated)
                    {
                        var list = actual as IList;
                        bool ok = list != null && list.Count == 2 && Same(f, expected, list[0]) && Same(f, ScalarValue(f, 1), list[1]);
                        Check.That(ok, what + "." + f.Name + " decodes to its values");
                    }
                    else Check.That(Same(f, expected, actual), what + "." + f.Name + " decodes to " + expected + " (got " + actual + ")");
                }
            }
        }

        static bool Same(FieldDesc f, object expected, object actual)
        {
            if (actual == null) return false;
            if (f.Type == TEnum) return (int)expected == Convert.ToInt32(actual);
            if (f.Type == TBytes) return Convert.ToBase64String((byte[])expected) == Convert.ToBase64String((byte[])actual);
            return expected.Equals(actual);
        }
    }
}
