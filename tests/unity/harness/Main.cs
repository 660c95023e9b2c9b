// Main.cs — the console harness ctest runs under mono:
//   unit <Tests.dll>            run every [Test] in the package's test assembly
//   schema <crowd.desc>         compare the C# codec with protoc's descriptor set
//   server <crowd-server>       a real server: hello, spawn, targets, snapshots until arrival
//   client                      CrowdClient against a hostile fake server (garbage, reconnect)
//   ws-client                   CrowdClient over WebSocket against a hostile fake WebSocket server
//   minor1                      CrowdClient's minor-1 side against a scripted fake server (resume, events, paths)
//   samples <crowd-server>      drive the CrowdView sample (stubbed UnityEngine) against a real server
//   cdecode <fixture-generator> decode snapshot frames written by proto/wire's C encoder
//   layout <package dir> [version]  package.json (the project's version) and a .meta for everything Unity imports
//   server-minor1 <crowd-server> the minor-1 side against a real server, each part when the server shows it
//   readme <snippet.dll> <crowd-server>  run the package README's ten lines against a real server
//   readme-async <snippet.dll> <crowd-server>  run the package README's await example (over WebSocket)
//   worlds <crowd-server>       worlds (minor 2): Hello.world, ListWorlds, the refusals, create/join/close
//   websocket <crowd-server>    over WebSocket (thread and WebGL's polled path), the Task methods, ConnectAsync's failures
// Exit code 0 only when every check passed; the last line is "N passed, N failed"
// (77, ctest's skip, when a scenario found nothing to test and failed nothing).
using System;
using System.Collections.Generic;
using System.Reflection;

namespace Crowd.Harness
{
    public static class Check
    {
        public static int Passed, Failed;
        static string skipped;

        /// <summary>What the scenario needs is not there: the run reports itself skipped (exit 77).</summary>
        public static void Skip(string why)
        {
            skipped = why;
            Console.WriteLine("skip " + why);
        }

        public static void That(bool condition, string what)
        {
            if (condition)
            {
                Passed++;
                Console.WriteLine("ok   " + what);
            }
            else
            {
                Failed++;
                Console.WriteLine("FAIL " + what);
            }
        }

        public static int Summary()
        {
            Console.WriteLine(Passed + " passed, " + Failed + " failed" + (skipped != null ? ", skipped: " + skipped : ""));
            if (skipped != null && Failed == 0) return 77;
            return Failed == 0 && Passed > 0 ? 0 : 1;
        }
    }

    public static class Program
    {
        public static int Main(string[] args)
        {
            if (args.Length < 1)
            {
                Console.Error.WriteLine("usage: crowd-unity-harness.exe unit|schema|server|client|minor1|samples|cdecode ...");
                return 2;
            }
            try
            {
                switch (args[0])
                {
                    case "unit": RunUnitTests(Assembly.LoadFrom(args[1])); break;
                    case "schema": SchemaCheck.Run(args[1]); break;
                    case "server": ServerScenario.Run(args[1]); break;
                    case "client": FakeServerScenario.Run(); break;
                    case "ws-client": WebSocketFakeServerScenario.Run(); break;
                    case "minor1": MinorOneScenario.Run(); break;
                    case "server-minor1": ServerMinorOneScenario.Run(args[1]); break;
                    case "worlds": WorldsScenario.Run(args[1]); break;
                    case "failover": FailoverScenario.Run(args[1]); break;
                    case "samples": SamplesScenario.Run(args[1]); break;
                    case "cdecode": CDecodeCheck.Run(args[1]); break;
                    case "layout": LayoutCheck.Run(args[1], args.Length > 2 ? args[2] : null); break;
                    case "readme": ReadmeScenario.Run(args[1], args[2]); break;
                    case "websocket": WebSocketScenario.Run(args[1]); break;
                    case "readme-async": ReadmeScenario.RunAsync(args[1], args[2]); break;
                    default:
                        Console.Error.WriteLine("unknown mode " + args[0]);
                        return 2;
                }
            }
            catch (Exception e)
            {
                Check.That(false, "harness ended by an exception: " + e);
            }
            return Check.Summary();
        }

        // NUnit-style: every public method with [Test] on every [TestFixture] class, a fresh instance each.
        static void RunUnitTests(Assembly tests)
        {
            var types = new List<Type>(tests.GetTypes());
            types.Sort((a, b) => string.CompareOrdinal(a.FullName, b.FullName));
            foreach (var type in types)
            {
                if (type.GetCustomAttributes(typeof(NUnit.Framework.TestFixtureAttribute), false).Length == 0) continue;
                foreach (var method in type.GetMethods(BindingFlags.Public | BindingFlags.Instance))
                {
                    if (method.GetCustomAttributes(typeof(NUnit.Framework.TestAttribute), false).Length == 0) continue;
                    string name = type.Name + "." + method.Name;
                    try
                    {
                        method.Invoke(Activator.CreateInstance(type), null);
                        Check.That(true, name);
                    }
                    catch (TargetInvocationException e)
                    {
                        Check.That(false, name + ": " + e.InnerException.Message);
                        Console.WriteLine(e.InnerException.StackTrace);
                    }
                }
            }
        }
    }
}
