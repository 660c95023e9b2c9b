// Messages.cs — every message and enum of crowd.v1 (proto/crowd.proto) as C#
// types with a hand-written codec. Names follow Google.Protobuf's C# mapping
// (snake_case -> PascalCase, enum prefixes dropped); the schema test
// (tests/unity) checks numbers, wire types and names against protoc's descriptor.
using System.Collections.Generic;

namespace Crowd.V1
{
    public static class Protocol
    {
        public const uint Major = 1;
        public const uint Minor = 0;
    }

    public enum Role
    {
        Unspecified = 0,
        Viewer = 1,
        Player = 2,
        Admin = 3,
    }

    public enum ErrorCode
    {
        None = 0,
        Malformed = 1,
        FrameTooLarge = 2,
        UnknownMessage = 3,
        HelloRequired = 4,
        HelloTimeout = 5,
        UnsupportedVersion = 6,
        BadToken = 7,
        PermissionDenied = 8,
        NotOwner = 9,
        InvalidArgument = 10,
        UnknownId = 11,
        StaleId = 12,
        LimitAgentsWorld = 13,
        LimitAgentsConnection = 14,
        LimitBatch = 15,
        RateLimited = 16,
        BadPolygon = 17,
        AlreadyHello = 18,
        SlowConsumer = 19,
        ShuttingDown = 20,
        ServerFull = 21,
        Internal = 22,
    }

    /// <summary>Encode/decode helpers shared by every message.</summary>
    public static class ProtoMessage
    {
        public static byte[] ToByteArray(IProtoMessage m)
        {
            var w = new ProtoWriter();
            m.WriteTo(w);
            return w.ToArray();
        }

        public static T Parse<T>(byte[] data, int offset, int count) where T : IProtoMessage, new()
        {
            var msg = new T();
            msg.MergeFrom(new ProtoReader(data, offset, count));
            return msg;
        }

        public static T Parse<T>(byte[] data) where T : IProtoMessage, new()
        {
            return Parse<T>(data, 0, data.Length);
        }
    }

    public sealed class Vec2 : IProtoMessage
    {
        public const int XFieldNumber = 1;
        public const int YFieldNumber = 2;
        public float X;
        public float Y;

        public Vec2() { }
        public Vec2(float x, float y) { X = x; Y = y; }

        public void WriteTo(ProtoWriter w)
        {
            w.WriteFloat(XFieldNumber, X);
            w.WriteFloat(YFieldNumber, Y);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case XFieldNumber: X = r.ReadFloat(); break;
                    case YFieldNumber: Y = r.ReadFloat(); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    public sealed class Rect : IProtoMessage
    {
        public const int MinXFieldNumber = 1;
        public const int MinYFieldNumber = 2;
        public const int MaxXFieldNumber = 3;
        public const int MaxYFieldNumber = 4;
        public float MinX, MinY, MaxX, MaxY;

        public Rect() { }
        public Rect(float minX, float minY, float maxX, float maxY) { MinX = minX; MinY = minY; MaxX = maxX; MaxY = maxY; }

        public void WriteTo(ProtoWriter w)
        {
            w.WriteFloat(MinXFieldNumber, MinX);
            w.WriteFloat(MinYFieldNumber, MinY);
            w.WriteFloat(MaxXFieldNumber, MaxX);
            w.WriteFloat(MaxYFieldNumber, MaxY);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case MinXFieldNumber: MinX = r.ReadFloat(); break;
                    case MinYFieldNumber: MinY = r.ReadFloat(); break;
                    case MaxXFieldNumber: MaxX = r.ReadFloat(); break;
                    case MaxYFieldNumber: MaxY = r.ReadFloat(); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    // ------------------------------------------------------------ client -> server

    public sealed class Hello : IProtoMessage
    {
        public const int ProtocolMajorFieldNumber = 1;
        public const int ProtocolMinorFieldNumber = 2;
        public const int TokenFieldNumber = 3;
        public const int ClientNameFieldNumber = 4;
        public const int KeepAgentsOnDisconnectFieldNumber = 5;
        public uint ProtocolMajor = Protocol.Major;
        public uint ProtocolMinor = Protocol.Minor;
        public string Token = "";
        public string ClientName = "";
        public bool KeepAgentsOnDisconnect;

        public void WriteTo(ProtoWriter w)
        {
            w.WriteUInt32(ProtocolMajorFieldNumber, ProtocolMajor);
            w.WriteUInt32(ProtocolMinorFieldNumber, ProtocolMinor);
            w.WriteString(TokenFieldNumber, Token);
            w.WriteString(ClientNameFieldNumber, ClientName);
            w.WriteBool(KeepAgentsOnDisconnectFieldNumber, KeepAgentsOnDisconnect);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case ProtocolMajorFieldNumber: ProtocolMajor = r.ReadUInt32(); break;
                    case ProtocolMinorFieldNumber: ProtocolMinor = r.ReadUInt32(); break;
                    case TokenFieldNumber: Token = r.ReadString(); break;
                    case ClientNameFieldNumber: ClientName = r.ReadString(); break;
                    case KeepAgentsOnDisconnectFieldNumber: KeepAgentsOnDisconnect = r.ReadBool(); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    /// <summary>Every field is optional; the server's agent defaults fill what is absent (null).</summary>
    public sealed class AgentSpec : IProtoMessage
    {
        public const int PositionFieldNumber = 1;
        public const int TargetFieldNumber = 2;
        public const int PrefVelocityFieldNumber = 3;
        public const int RadiusFieldNumber = 4;
        public const int MaxSpeedFieldNumber = 5;
        public const int PrefSpeedFieldNumber = 6;
        public const int NeighborDistFieldNumber = 7;
        public const int MaxNeighborsFieldNumber = 8;
        public const int TimeHorizonFieldNumber = 9;
        public const int TimeHorizonObstFieldNumber = 10;
        public const int WeightFieldNumber = 11;
        public const int LayerFieldNumber = 12;
        public const int MaskFieldNumber = 13;
        public Vec2 Position;
        public Vec2 Target;
        public Vec2 PrefVelocity;
        public float? Radius;
        public float? MaxSpeed;
        public float? PrefSpeed;
        public float? NeighborDist;
        public uint? MaxNeighbors;
        public float? TimeHorizon;
        public float? TimeHorizonObst;
        public float? Weight;
        public uint? Layer;
        public uint? Mask;

        public void WriteTo(ProtoWriter w)
        {
            w.WriteMessage(PositionFieldNumber, Position);
            w.WriteMessage(TargetFieldNumber, Target);
            w.WriteMessage(PrefVelocityFieldNumber, PrefVelocity);
            w.WriteOptionalFloat(RadiusFieldNumber, Radius);
            w.WriteOptionalFloat(MaxSpeedFieldNumber, MaxSpeed);
            w.WriteOptionalFloat(PrefSpeedFieldNumber, PrefSpeed);
            w.WriteOptionalFloat(NeighborDistFieldNumber, NeighborDist);
            w.WriteOptionalUInt32(MaxNeighborsFieldNumber, MaxNeighbors);
            w.WriteOptionalFloat(TimeHorizonFieldNumber, TimeHorizon);
            w.WriteOptionalFloat(TimeHorizonObstFieldNumber, TimeHorizonObst);
            w.WriteOptionalFloat(WeightFieldNumber, Weight);
            w.WriteOptionalUInt32(LayerFieldNumber, Layer);
            w.WriteOptionalUInt32(MaskFieldNumber, Mask);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case PositionFieldNumber: Position = r.MergeMessage(Position); break;
                    case TargetFieldNumber: Target = r.MergeMessage(Target); break;
                    case PrefVelocityFieldNumber: PrefVelocity = r.MergeMessage(PrefVelocity); break;
                    case RadiusFieldNumber: Radius = r.ReadFloat(); break;
                    case MaxSpeedFieldNumber: MaxSpeed = r.ReadFloat(); break;
                    case PrefSpeedFieldNumber: PrefSpeed = r.ReadFloat(); break;
                    case NeighborDistFieldNumber: NeighborDist = r.ReadFloat(); break;
                    case MaxNeighborsFieldNumber: MaxNeighbors = r.ReadUInt32(); break;
                    case TimeHorizonFieldNumber: TimeHorizon = r.ReadFloat(); break;
                    case TimeHorizonObstFieldNumber: TimeHorizonObst = r.ReadFloat(); break;
                    case WeightFieldNumber: Weight = r.ReadFloat(); break;
                    case LayerFieldNumber: Layer = r.ReadUInt32(); break;
                    case MaskFieldNumber: Mask = r.ReadUInt32(); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    public sealed class SpawnAgents : IProtoMessage
    {
        public const int AgentsFieldNumber = 1;
        public List<AgentSpec> Agents = new List<AgentSpec>();

        public void WriteTo(ProtoWriter w)
        {
            foreach (var a in Agents) w.WriteMessage(AgentsFieldNumber, a ?? new AgentSpec());
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case AgentsFieldNumber: Agents.Add(r.ReadMessage<AgentSpec>()); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    /// <summary>Parallel arrays. If X and Y have exactly one entry, every id gets that target.</summary>
    public sealed class SetTargets : IProtoMessage
    {
        public const int IdsFieldNumber = 1;
        public const int XFieldNumber = 2;
        public const int YFieldNumber = 3;
        public List<uint> Ids = new List<uint>();
        public List<float> X = new List<float>();
        public List<float> Y = new List<float>();

        public void WriteTo(ProtoWriter w)
        {
            w.WritePackedUInt32(IdsFieldNumber, Ids);
            w.WritePackedFloat(XFieldNumber, X);
            w.WritePackedFloat(YFieldNumber, Y);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case IdsFieldNumber: r.ReadRepeatedUInt32(Ids); break;
                    case XFieldNumber: r.ReadRepeatedFloat(X); break;
                    case YFieldNumber: r.ReadRepeatedFloat(Y); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    /// <summary>Preferred velocities given directly; clears targets. One (Vx, Vy) applies to every id.</summary>
    public sealed class SetVelocities : IProtoMessage
    {
        public const int IdsFieldNumber = 1;
        public const int VxFieldNumber = 2;
        public const int VyFieldNumber = 3;
        public List<uint> Ids = new List<uint>();
        public List<float> Vx = new List<float>();
        public List<float> Vy = new List<float>();

        public void WriteTo(ProtoWriter w)
        {
            w.WritePackedUInt32(IdsFieldNumber, Ids);
            w.WritePackedFloat(VxFieldNumber, Vx);
            w.WritePackedFloat(VyFieldNumber, Vy);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case IdsFieldNumber: r.ReadRepeatedUInt32(Ids); break;
                    case VxFieldNumber: r.ReadRepeatedFloat(Vx); break;
                    case VyFieldNumber: r.ReadRepeatedFloat(Vy); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    public sealed class RemoveAgents : IProtoMessage
    {
        public const int IdsFieldNumber = 1;
        public List<uint> Ids = new List<uint>();

        public void WriteTo(ProtoWriter w) { w.WritePackedUInt32(IdsFieldNumber, Ids); }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                if (f == IdsFieldNumber) r.ReadRepeatedUInt32(Ids);
                else r.SkipUnknown();
            }
        }
    }

    /// <summary>A polygon, vertices counter-clockwise; 2 vertices make a segment. Admin only.</summary>
    public sealed class AddObstacle : IProtoMessage
    {
        public const int XFieldNumber = 1;
        public const int YFieldNumber = 2;
        public List<float> X = new List<float>();
        public List<float> Y = new List<float>();

        public void WriteTo(ProtoWriter w)
        {
            w.WritePackedFloat(XFieldNumber, X);
            w.WritePackedFloat(YFieldNumber, Y);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case XFieldNumber: r.ReadRepeatedFloat(X); break;
                    case YFieldNumber: r.ReadRepeatedFloat(Y); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    public sealed class RemoveObstacle : IProtoMessage
    {
        public const int IdFieldNumber = 1;
        public uint Id;

        public void WriteTo(ProtoWriter w) { w.WriteUInt32(IdFieldNumber, Id); }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                if (f == IdFieldNumber) Id = r.ReadUInt32();
                else r.SkipUnknown();
            }
        }
    }

    /// <summary>Replaces the connection's subscription. No Area: the whole world.</summary>
    public sealed class Subscribe : IProtoMessage
    {
        public const int AreaFieldNumber = 1;
        public const int DivisorFieldNumber = 2;
        public const int UnsubscribeFieldNumber = 3;
        public Rect Area;
        public uint Divisor;
        public bool Unsubscribe;

        public void WriteTo(ProtoWriter w)
        {
            w.WriteMessage(AreaFieldNumber, Area);
            w.WriteUInt32(DivisorFieldNumber, Divisor);
            w.WriteBool(UnsubscribeFieldNumber, Unsubscribe);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case AreaFieldNumber: Area = r.MergeMessage(Area); break;
                    case DivisorFieldNumber: Divisor = r.ReadUInt32(); break;
                    case UnsubscribeFieldNumber: Unsubscribe = r.ReadBool(); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    public sealed class Ping : IProtoMessage
    {
        public const int ClientTimeUsFieldNumber = 1;
        public ulong ClientTimeUs;

        public void WriteTo(ProtoWriter w) { w.WriteUInt64(ClientTimeUsFieldNumber, ClientTimeUs); }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                if (f == ClientTimeUsFieldNumber) ClientTimeUs = r.ReadUInt64();
                else r.SkipUnknown();
            }
        }
    }

    public sealed class ClientMessage : IProtoMessage
    {
        public const int RequestIdFieldNumber = 1;
        public const int HelloFieldNumber = 2;
        public const int SpawnAgentsFieldNumber = 3;
        public const int SetTargetsFieldNumber = 4;
        public const int SetVelocitiesFieldNumber = 5;
        public const int RemoveAgentsFieldNumber = 6;
        public const int AddObstacleFieldNumber = 7;
        public const int RemoveObstacleFieldNumber = 8;
        public const int SubscribeFieldNumber = 9;
        public const int PingFieldNumber = 10;

        /// <summary>Which member of the `msg` oneof is set (its value is the field number).</summary>
        public enum MsgOneofCase
        {
            None = 0,
            Hello = HelloFieldNumber,
            SpawnAgents = SpawnAgentsFieldNumber,
            SetTargets = SetTargetsFieldNumber,
            SetVelocities = SetVelocitiesFieldNumber,
            RemoveAgents = RemoveAgentsFieldNumber,
            AddObstacle = AddObstacleFieldNumber,
            RemoveObstacle = RemoveObstacleFieldNumber,
            Subscribe = SubscribeFieldNumber,
            Ping = PingFieldNumber,
        }

        public uint RequestId;
        IProtoMessage msg;
        MsgOneofCase msgCase;

        public MsgOneofCase MsgCase { get { return msgCase; } }

        T Get<T>(MsgOneofCase c) where T : class { return msgCase == c ? (T)msg : null; }

        void Set(MsgOneofCase c, IProtoMessage m)
        {
            msg = m;
            msgCase = m == null ? MsgOneofCase.None : c;
        }

        public Hello Hello { get { return Get<Hello>(MsgOneofCase.Hello); } set { Set(MsgOneofCase.Hello, value); } }
        public SpawnAgents SpawnAgents { get { return Get<SpawnAgents>(MsgOneofCase.SpawnAgents); } set { Set(MsgOneofCase.SpawnAgents, value); } }
        public SetTargets SetTargets { get { return Get<SetTargets>(MsgOneofCase.SetTargets); } set { Set(MsgOneofCase.SetTargets, value); } }
        public SetVelocities SetVelocities { get { return Get<SetVelocities>(MsgOneofCase.SetVelocities); } set { Set(MsgOneofCase.SetVelocities, value); } }
        public RemoveAgents RemoveAgents { get { return Get<RemoveAgents>(MsgOneofCase.RemoveAgents); } set { Set(MsgOneofCase.RemoveAgents, value); } }
        public AddObstacle AddObstacle { get { return Get<AddObstacle>(MsgOneofCase.AddObstacle); } set { Set(MsgOneofCase.AddObstacle, value); } }
        public RemoveObstacle RemoveObstacle { get { return Get<RemoveObstacle>(MsgOneofCase.RemoveObstacle); } set { Set(MsgOneofCase.RemoveObstacle, value); } }
        public Subscribe Subscribe { get { return Get<Subscribe>(MsgOneofCase.Subscribe); } set { Set(MsgOneofCase.Subscribe, value); } }
        public Ping Ping { get { return Get<Ping>(MsgOneofCase.Ping); } set { Set(MsgOneofCase.Ping, value); } }

        public void WriteTo(ProtoWriter w)
        {
            w.WriteUInt32(RequestIdFieldNumber, RequestId);
            if (msgCase != MsgOneofCase.None) w.WriteMessage((int)msgCase, msg);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case RequestIdFieldNumber: RequestId = r.ReadUInt32(); break;
                    case HelloFieldNumber: Hello = r.MergeMessage(Hello); break;
                    case SpawnAgentsFieldNumber: SpawnAgents = r.MergeMessage(SpawnAgents); break;
                    case SetTargetsFieldNumber: SetTargets = r.MergeMessage(SetTargets); break;
                    case SetVelocitiesFieldNumber: SetVelocities = r.MergeMessage(SetVelocities); break;
                    case RemoveAgentsFieldNumber: RemoveAgents = r.MergeMessage(RemoveAgents); break;
                    case AddObstacleFieldNumber: AddObstacle = r.MergeMessage(AddObstacle); break;
                    case RemoveObstacleFieldNumber: RemoveObstacle = r.MergeMessage(RemoveObstacle); break;
                    case SubscribeFieldNumber: Subscribe = r.MergeMessage(Subscribe); break;
                    case PingFieldNumber: Ping = r.MergeMessage(Ping); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    // ------------------------------------------------------------ server -> client

    public sealed class Welcome : IProtoMessage
    {
        public const int ProtocolMajorFieldNumber = 1;
        public const int ProtocolMinorFieldNumber = 2;
        public const int ServerVersionFieldNumber = 3;
        public const int ClientIdFieldNumber = 4;
        public const int RoleFieldNumber = 5;
        public const int TickRateHzFieldNumber = 6;
        public const int SnapshotDivisorFieldNumber = 7;
        public const int PrecisionFieldNumber = 8;
        public const int WorldBoundsFieldNumber = 9;
        public const int TickFieldNumber = 10;
        public uint ProtocolMajor;
        public uint ProtocolMinor;
        public string ServerVersion = "";
        public uint ClientId;
        public Role Role;
        public uint TickRateHz;
        public uint SnapshotDivisor;
        public uint Precision;
        public Rect WorldBounds;
        public ulong Tick;

        public void WriteTo(ProtoWriter w)
        {
            w.WriteUInt32(ProtocolMajorFieldNumber, ProtocolMajor);
            w.WriteUInt32(ProtocolMinorFieldNumber, ProtocolMinor);
            w.WriteString(ServerVersionFieldNumber, ServerVersion);
            w.WriteUInt32(ClientIdFieldNumber, ClientId);
            w.WriteEnum(RoleFieldNumber, (int)Role);
            w.WriteUInt32(TickRateHzFieldNumber, TickRateHz);
            w.WriteUInt32(SnapshotDivisorFieldNumber, SnapshotDivisor);
            w.WriteUInt32(PrecisionFieldNumber, Precision);
            w.WriteMessage(WorldBoundsFieldNumber, WorldBounds);
            w.WriteUInt64(TickFieldNumber, Tick);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case ProtocolMajorFieldNumber: ProtocolMajor = r.ReadUInt32(); break;
                    case ProtocolMinorFieldNumber: ProtocolMinor = r.ReadUInt32(); break;
                    case ServerVersionFieldNumber: ServerVersion = r.ReadString(); break;
                    case ClientIdFieldNumber: ClientId = r.ReadUInt32(); break;
                    case RoleFieldNumber: Role = (Role)r.ReadEnum(); break;
                    case TickRateHzFieldNumber: TickRateHz = r.ReadUInt32(); break;
                    case SnapshotDivisorFieldNumber: SnapshotDivisor = r.ReadUInt32(); break;
                    case PrecisionFieldNumber: Precision = r.ReadUInt32(); break;
                    case WorldBoundsFieldNumber: WorldBounds = r.MergeMessage(WorldBounds); break;
                    case TickFieldNumber: Tick = r.ReadUInt64(); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    public sealed class Ack : IProtoMessage
    {
        public const int RequestIdFieldNumber = 1;
        public const int IdsFieldNumber = 2;
        public uint RequestId;
        /// <summary>What the request created, in order (new agent ids, or the obstacle id).</summary>
        public List<uint> Ids = new List<uint>();

        public void WriteTo(ProtoWriter w)
        {
            w.WriteUInt32(RequestIdFieldNumber, RequestId);
            w.WritePackedUInt32(IdsFieldNumber, Ids);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case RequestIdFieldNumber: RequestId = r.ReadUInt32(); break;
                    case IdsFieldNumber: r.ReadRepeatedUInt32(Ids); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    public sealed class Error : IProtoMessage
    {
        public const int RequestIdFieldNumber = 1;
        public const int CodeFieldNumber = 2;
        public const int MessageFieldNumber = 3;
        public const int IndexFieldNumber = 4;
        /// <summary>0 when the server speaks unasked.</summary>
        public uint RequestId;
        /// <summary>ErrorCode.None never comes from a server: the client uses it for "the connection was lost".</summary>
        public ErrorCode Code;
        public string Message = "";
        /// <summary>Which item of a batch was refused.</summary>
        public uint Index;

        public void WriteTo(ProtoWriter w)
        {
            w.WriteUInt32(RequestIdFieldNumber, RequestId);
            w.WriteEnum(CodeFieldNumber, (int)Code);
            w.WriteString(MessageFieldNumber, Message);
            w.WriteUInt32(IndexFieldNumber, Index);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case RequestIdFieldNumber: RequestId = r.ReadUInt32(); break;
                    case CodeFieldNumber: Code = (ErrorCode)r.ReadEnum(); break;
                    case MessageFieldNumber: Message = r.ReadString(); break;
                    case IndexFieldNumber: Index = r.ReadUInt32(); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }

        public override string ToString()
        {
            return "Error " + Code + " (request " + RequestId + ", index " + Index + "): " + Message;
        }
    }

    public sealed class Obstacle : IProtoMessage
    {
        public const int IdFieldNumber = 1;
        public const int XFieldNumber = 2;
        public const int YFieldNumber = 3;
        public uint Id;
        public List<float> X = new List<float>();
        public List<float> Y = new List<float>();

        public void WriteTo(ProtoWriter w)
        {
            w.WriteUInt32(IdFieldNumber, Id);
            w.WritePackedFloat(XFieldNumber, X);
            w.WritePackedFloat(YFieldNumber, Y);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case IdFieldNumber: Id = r.ReadUInt32(); break;
                    case XFieldNumber: r.ReadRepeatedFloat(X); break;
                    case YFieldNumber: r.ReadRepeatedFloat(Y); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    /// <summary>One subscriber's view after a tick, delta-coded against the previous snapshot it
    /// received: see proto/crowd.proto. The raw arrays; SnapshotDecoder turns them into agents.</summary>
    public sealed class Snapshot : IProtoMessage
    {
        public const int TickFieldNumber = 1;
        public const int StateHashFieldNumber = 2;
        public const int KeyframeFieldNumber = 3;
        public const int WorldAgentCountFieldNumber = 4;
        public const int EntriesFieldNumber = 5;
        public const int XFieldNumber = 6;
        public const int YFieldNumber = 7;
        public const int VxFieldNumber = 8;
        public const int VyFieldNumber = 9;
        public const int RadiusFieldNumber = 10;
        public const int OwnerFieldNumber = 11;
        public const int RemovedIdDeltasFieldNumber = 12;
        public const int ObstaclesChangedFieldNumber = 13;
        public const int ObstaclesFieldNumber = 14;
        public ulong Tick;
        public ulong StateHash;
        public bool Keyframe;
        public uint WorldAgentCount;
        public List<ulong> Entries = new List<ulong>();
        public List<int> X = new List<int>();
        public List<int> Y = new List<int>();
        public List<int> Vx = new List<int>();
        public List<int> Vy = new List<int>();
        public List<uint> Radius = new List<uint>();
        public List<uint> Owner = new List<uint>();
        public List<uint> RemovedIdDeltas = new List<uint>();
        public bool ObstaclesChanged;
        public List<Obstacle> Obstacles = new List<Obstacle>();

        public void WriteTo(ProtoWriter w)
        {
            w.WriteUInt64(TickFieldNumber, Tick);
            w.WriteUInt64(StateHashFieldNumber, StateHash);
            w.WriteBool(KeyframeFieldNumber, Keyframe);
            w.WriteUInt32(WorldAgentCountFieldNumber, WorldAgentCount);
            w.WritePackedUInt64(EntriesFieldNumber, Entries);
            w.WritePackedSInt32(XFieldNumber, X);
            w.WritePackedSInt32(YFieldNumber, Y);
            w.WritePackedSInt32(VxFieldNumber, Vx);
            w.WritePackedSInt32(VyFieldNumber, Vy);
            w.WritePackedUInt32(RadiusFieldNumber, Radius);
            w.WritePackedUInt32(OwnerFieldNumber, Owner);
            w.WritePackedUInt32(RemovedIdDeltasFieldNumber, RemovedIdDeltas);
            w.WriteBool(ObstaclesChangedFieldNumber, ObstaclesChanged);
            foreach (var o in Obstacles) w.WriteMessage(ObstaclesFieldNumber, o ?? new Obstacle());
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case TickFieldNumber: Tick = r.ReadUInt64(); break;
                    case StateHashFieldNumber: StateHash = r.ReadUInt64(); break;
                    case KeyframeFieldNumber: Keyframe = r.ReadBool(); break;
                    case WorldAgentCountFieldNumber: WorldAgentCount = r.ReadUInt32(); break;
                    case EntriesFieldNumber: r.ReadRepeatedUInt64(Entries); break;
                    case XFieldNumber: r.ReadRepeatedSInt32(X); break;
                    case YFieldNumber: r.ReadRepeatedSInt32(Y); break;
                    case VxFieldNumber: r.ReadRepeatedSInt32(Vx); break;
                    case VyFieldNumber: r.ReadRepeatedSInt32(Vy); break;
                    case RadiusFieldNumber: r.ReadRepeatedUInt32(Radius); break;
                    case OwnerFieldNumber: r.ReadRepeatedUInt32(Owner); break;
                    case RemovedIdDeltasFieldNumber: r.ReadRepeatedUInt32(RemovedIdDeltas); break;
                    case ObstaclesChangedFieldNumber: ObstaclesChanged = r.ReadBool(); break;
                    case ObstaclesFieldNumber: Obstacles.Add(r.ReadMessage<Obstacle>()); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    public sealed class Pong : IProtoMessage
    {
        public const int ClientTimeUsFieldNumber = 1;
        public const int ServerTickFieldNumber = 2;
        public ulong ClientTimeUs;
        public ulong ServerTick;

        public void WriteTo(ProtoWriter w)
        {
            w.WriteUInt64(ClientTimeUsFieldNumber, ClientTimeUs);
            w.WriteUInt64(ServerTickFieldNumber, ServerTick);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case ClientTimeUsFieldNumber: ClientTimeUs = r.ReadUInt64(); break;
                    case ServerTickFieldNumber: ServerTick = r.ReadUInt64(); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }

    public sealed class ServerMessage : IProtoMessage
    {
        public const int WelcomeFieldNumber = 1;
        public const int AckFieldNumber = 2;
        public const int ErrorFieldNumber = 3;
        public const int SnapshotFieldNumber = 4;
        public const int PongFieldNumber = 5;

        public enum MsgOneofCase
        {
            None = 0,
            Welcome = WelcomeFieldNumber,
            Ack = AckFieldNumber,
            Error = ErrorFieldNumber,
            Snapshot = SnapshotFieldNumber,
            Pong = PongFieldNumber,
        }

        IProtoMessage msg;
        MsgOneofCase msgCase;

        public MsgOneofCase MsgCase { get { return msgCase; } }

        T Get<T>(MsgOneofCase c) where T : class { return msgCase == c ? (T)msg : null; }

        void Set(MsgOneofCase c, IProtoMessage m)
        {
            msg = m;
            msgCase = m == null ? MsgOneofCase.None : c;
        }

        public Welcome Welcome { get { return Get<Welcome>(MsgOneofCase.Welcome); } set { Set(MsgOneofCase.Welcome, value); } }
        public Ack Ack { get { return Get<Ack>(MsgOneofCase.Ack); } set { Set(MsgOneofCase.Ack, value); } }
        public Error Error { get { return Get<Error>(MsgOneofCase.Error); } set { Set(MsgOneofCase.Error, value); } }
        public Snapshot Snapshot { get { return Get<Snapshot>(MsgOneofCase.Snapshot); } set { Set(MsgOneofCase.Snapshot, value); } }
        public Pong Pong { get { return Get<Pong>(MsgOneofCase.Pong); } set { Set(MsgOneofCase.Pong, value); } }

        public void WriteTo(ProtoWriter w)
        {
            if (msgCase != MsgOneofCase.None) w.WriteMessage((int)msgCase, msg);
        }

        public void MergeFrom(ProtoReader r)
        {
            int f;
            while (r.NextField(out f))
            {
                switch (f)
                {
                    case WelcomeFieldNumber: Welcome = r.MergeMessage(Welcome); break;
                    case AckFieldNumber: Ack = r.MergeMessage(Ack); break;
                    case ErrorFieldNumber: Error = r.MergeMessage(Error); break;
                    case SnapshotFieldNumber: Snapshot = r.MergeMessage(Snapshot); break;
                    case PongFieldNumber: Pong = r.MergeMessage(Pong); break;
                    default: r.SkipUnknown(); break;
                }
            }
        }
    }
}
