// Vite builds web/src into web/dist (never committed); `eddy serve` serves it
// (gateway/static.c). Hashed names under /assets/ let the server cache them for a year.
import { defineConfig } from 'vite';

export default defineConfig({
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2020',
    sourcemap: false,
    chunkSizeWarningLimit: 800,
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:8080' },
  },
});
