/**
 * A short valid WAV file (RIFF, PCM, 8 kHz, 16-bit, mono): what the sandbox carrier serves as a
 * call's recording. A 440 Hz tone whose length follows the call's duration (at most 3 s), so a
 * client can play it and a test can parse it.
 */
export function toneWav(seconds: number, frequency = 440, sampleRate = 8000): Buffer {
  const samples = Math.max(1, Math.round(Math.min(3, Math.max(0.25, seconds)) * sampleRate));
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) {
    data.writeInt16LE(Math.round(Math.sin((2 * Math.PI * frequency * i) / sampleRate) * 8000), i * 2);
  }
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}
