// PolledWebSocket.cs — what CrowdWebSocket.jslib gives a WebGL build (a WebSocket
// polled by CrowdClient.Poll: readyState, a queue of whole binary messages, the
// reason it closed), made here from a ClientWebSocket and a reader task, so the
// client's WebGL path (no thread of its own) runs under Mono against a real server.
using System;
using System.Collections.Concurrent;
using System.Net.WebSockets;
using System.Threading;
using System.Threading.Tasks;
using Crowd.Client;

namespace Crowd.Harness
{
    internal sealed class PolledWebSocket : IPolledSocket
    {
        readonly ClientWebSocket ws = new ClientWebSocket();
        readonly ConcurrentQueue<byte[]> queue = new ConcurrentQueue<byte[]>();
        readonly object sendLock = new object();
        volatile int state; // the browser's readyState
        volatile string reason = "";
        public static int Opened;

        public static IPolledSocket Open(Uri url, string subprotocol)
        {
            Interlocked.Increment(ref Opened);
            var s = new PolledWebSocket();
            s.ws.Options.AddSubProtocol(subprotocol);
            Task.Run(() => s.Read(url, subprotocol));
            return s;
        }

        async Task Read(Uri url, string subprotocol)
        {
            try
            {
                await ws.ConnectAsync(url, CancellationToken.None);
                if (ws.SubProtocol != subprotocol)
                {
                    reason = "the server did not accept subprotocol " + subprotocol;
                    state = 3;
                    ws.Abort();
                    return;
                }
                state = 1;
                var buf = new byte[1 << 16];
                int len = 0;
                for (;;)
                {
                    if (len == buf.Length) Array.Resize(ref buf, buf.Length * 2);
                    var r = await ws.ReceiveAsync(new ArraySegment<byte>(buf, len, buf.Length - len), CancellationToken.None);
                    if (r.MessageType == WebSocketMessageType.Close)
                    {
                        reason = "closed " + (int)(r.CloseStatus ?? 0) + " " + r.CloseStatusDescription;
                        break;
                    }
                    len += r.Count;
                    if (!r.EndOfMessage) continue;
                    var m = new byte[len];
                    Buffer.BlockCopy(buf, 0, m, 0, len);
                    len = 0;
                    queue.Enqueue(m);
                }
            }
            catch (Exception e)
            {
                if (reason.Length == 0) reason = e.GetBaseException().Message;
            }
            state = 3;
        }

        public int ReadyState { get { return state; } }

        public byte[] NextMessage()
        {
            byte[] m;
            return queue.TryDequeue(out m) ? m : null;
        }

        public bool Send(byte[] message)
        {
            if (state != 1) return false;
            try
            {
                lock (sendLock) ws.SendAsync(new ArraySegment<byte>(message), WebSocketMessageType.Binary, true, CancellationToken.None).Wait();
                return true;
            }
            catch (Exception)
            {
                return false;
            }
        }

        public void Close(int code, string why)
        {
            if (state >= 2) return;
            state = 2;
            try
            {
                lock (sendLock) ws.CloseOutputAsync((WebSocketCloseStatus)code, why, CancellationToken.None).Wait(2000);
            }
            catch (Exception) { }
            ws.Abort();
            state = 3;
        }

        public string Reason { get { return reason; } }
    }
}
