// CDecodeCheck.cs — the C# snapshot decoder against proto/wire's C encoder:
// runs unity_snapshot_fixture, feeds its frames through FrameSplitter and
// SnapshotDecoder, and compares every decoded view with what the C side encoded.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using Crowd.V1;

namespace Crowd.Harness
{
    public static class CDecodeCheck
    {
        public static void Run(string generator)
        {
            string dir = Path.Combine(Path.GetTempPath(), "crowd-unity-" + Process.GetCurrentProcess().Id);
            Directory.CreateDirectory(dir);
            try
            {
                string framesPath = Path.Combine(dir, "frames.bin"), expectedPath = Path.Combine(dir, "expected.txt");
                var p = Process.Start(new ProcessStartInfo(generator, "\"" + framesPath + "\" \"" + expectedPath + "\"") { UseShellExecute = false });
                p.WaitForExit();
                Check.That(p.ExitCode == 0, "the C fixture generator ran");
                if (p.ExitCode != 0) return;
                Compare(File.ReadAllBytes(framesPath), File.ReadAllLines(expectedPath));
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        static void Compare(byte[] stream, string[] expected)
        {
            var splitter = new FrameSplitter(1 << 24);
            splitter.Push(stream, 0, stream.Length);
            var decoder = new SnapshotDecoder();
            int line = 0, snapshots = 0, mismatches = 0, keyframes = 0, obstacleChanges = 0, entered = 0, removed = 0;
            for (;;)
            {
                byte[] buf;
                int off, len;
                var r = splitter.Next(out buf, out off, out len);
                if (r != FrameResult.Ready)
                {
                    Check.That(r == FrameResult.NeedMore && splitter.Pending == 0, "the C frames split cleanly");
                    break;
                }
                var m = ProtoMessage.Parse<ServerMessage>(buf, off, len);
                var s = m.Snapshot;
                if (s == null)
                {
                    mismatches++;
                    break;
                }
                var view = decoder.Apply(s);
                snapshots++;
                if (s.Keyframe) keyframes++;
                if (s.ObstaclesChanged) obstacleChanges++;
                entered += decoder.LastEntered;
                removed += decoder.LastRemoved.Count;
                string[] h = expected[line++].Split(' ');
                int n = int.Parse(h[5]);
                bool headerOk = h[0] == "S" && ulong.Parse(h[1]) == s.Tick && ulong.Parse(h[2]) == s.StateHash &&
                                (h[3] == "1") == s.Keyframe && uint.Parse(h[4]) == s.WorldAgentCount && n == view.Length &&
                                int.Parse(h[6]) == decoder.Obstacles.Count;
                if (!headerOk)
                {
                    Console.WriteLine("tick " + s.Tick + ": header or count differs: " + expected[line - 1] + " vs " + view.Length + " agents");
                    mismatches++;
                }
                for (int i = 0; i < n; i++)
                {
                    string want = expected[line++];
                    if (i >= view.Length) continue;
                    var a = view[i];
                    string got = "A " + a.Id + " " + a.X + " " + a.Y + " " + a.Vx + " " + a.Vy + " " + a.Radius + " " + a.Owner;
                    if (got != want)
                    {
                        if (mismatches < 10) Console.WriteLine("tick " + s.Tick + ": expected " + want + ", decoded " + got);
                        mismatches++;
                    }
                }
                while (line < expected.Length && expected[line].StartsWith("O ", StringComparison.Ordinal))
                {
                    string[] o = expected[line++].Split(' ');
                    bool found = false;
                    foreach (var ob in decoder.Obstacles)
                        if (ob.Id == uint.Parse(o[1]) && ob.X.Count == int.Parse(o[2]) && ob.Y.Count == ob.X.Count) found = true;
                    if (!found) mismatches++;
                }
            }
            Check.That(snapshots == 240 && line == expected.Length, "decoded all " + snapshots + " C-encoded snapshots");
            Check.That(mismatches == 0, "every decoded agent and obstacle equals what the C encoder encoded (" + mismatches + " mismatches)");
            Check.That(keyframes >= 4 && obstacleChanges == 2 && entered > 0 && removed > 0,
                       "the stream exercised keyframes (" + keyframes + "), obstacle changes (" + obstacleChanges + "), entering (" + entered + ") and removed (" + removed + ") agents");
        }
    }
}
